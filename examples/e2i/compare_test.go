package e2i_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/examples/e2i"
)

// compared is one side of a comparison, computed from the rows with the tests' own code.
type compared struct {
	perWeek, rate, share, change, shareChange float64
}

// compareFromRows computes brand's NRx over regions in weeks [from, to] and the equal weeks
// before, each week counted only when every brand has all its deciles in every one of
// allRegions.
func compareFromRows(rows []e2i.Row, brand string, regions, allRegions []string, from, to int) compared {
	brands := []string{"Kisqali", "Fabhalta", "Verzenio"}
	cells := map[string]int{}
	for _, r := range rows {
		cells[fmt.Sprint(r.Brand, r.Region, r.Week)]++
	}
	complete := func(w int) bool {
		for _, b := range brands {
			for _, r := range allRegions {
				if cells[fmt.Sprint(b, r, w)] != e2i.Deciles {
					return false
				}
			}
		}
		return true
	}
	perWeek := func(b string, lo, hi int) float64 {
		var sum, n float64
		for w := lo; w <= hi; w++ {
			if !complete(w) {
				continue
			}
			n++
			for _, r := range regions {
				sum += weekly(rows, b, r, "NRx", 1, e2i.Deciles)[w-1]
			}
		}
		return sum / n
	}
	share := func(lo, hi int) float64 {
		var all float64
		for _, b := range brands {
			all += perWeek(b, lo, hi)
		}
		return perWeek(brand, lo, hi) / all
	}
	prescribers := 0.0
	for _, r := range regions {
		prescribers += e2i.NewDataset().Prescribers(r)
	}
	n := to - from + 1
	cur, prev := perWeek(brand, from, to), perWeek(brand, from-n, to-n)
	return compared{
		perWeek: cur, rate: cur / prescribers * 100, share: share(from, to),
		change: (cur - prev) / prev, shareChange: share(from, to) - share(from-n, to-n),
	}
}

func checkCompared(t *testing.T, name string, got map[string]any, want compared) {
	t.Helper()
	if got["name"] != name {
		t.Fatalf("item %v, want %s", got["name"], name)
	}
	near(t, name+" units_per_week", num(t, got, "units_per_week"), want.perWeek, 0.05)
	near(t, name+" rate", num(t, got, "rate_per_100_prescribers"), want.rate, 0.005)
	near(t, name+" share", num(t, got, "share"), want.share, 5e-5)
	near(t, name+" change_pct", num(t, got, "change_pct"), want.change, 5e-5)
	near(t, name+" share_change", num(t, got, "share_change"), want.shareChange, 5e-5)
}

func comparisonItems(t *testing.T, r *troupe.Result) []map[string]any {
	t.Helper()
	cmp, ok := r.AgentResult["comparison"].(map[string]any)
	if !ok {
		t.Fatalf("no comparison in %v", r.AgentResult)
	}
	return cmp["items"].([]map[string]any)
}

// Two brands: each one's figures over the last 8 weeks against the 8 before, in the Midwest,
// where the planted drop cuts Kisqali and Verzenio gains.
func TestComparisonByBrand(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	parsed := e2i.ParseQuery("Compare Kisqali and Verzenio NRx in the Midwest")
	r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", parsed))
	items := comparisonItems(t, r)
	mw := []string{"Midwest"}
	k := compareFromRows(rows, "Kisqali", mw, mw, e2i.Weeks-7, e2i.Weeks)
	v := compareFromRows(rows, "Verzenio", mw, mw, e2i.Weeks-7, e2i.Weeks)
	checkCompared(t, "Kisqali", items[0], k)
	checkCompared(t, "Verzenio", items[1], v)
	if k.change >= 0 || v.change <= 0 {
		t.Errorf("Kisqali change %.3f, Verzenio %.3f: want the planted drop and the competitor's gain", k.change, v.change)
	}
	cmp := r.AgentResult["comparison"].(map[string]any)
	if cmp["leader"] != "Kisqali" {
		t.Errorf("leader = %v, want Kisqali", cmp["leader"])
	}
	near(t, "lead_pct", num(t, cmp, "lead_pct"), k.rate/v.rate-1, 5e-4)
}

// Two regions: the brand's figures in each, over the weeks every brand's feed covers (Verzenio's
// West feed is a week late, so week 26 is left out).
func TestComparisonByRegion(t *testing.T) {
	reg, rows := registry(t), e2i.NewDataset().Rows()
	parsed := e2i.ParseQuery("How does Kisqali NRx in the Midwest compare with the West?")
	r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", parsed))
	items := comparisonItems(t, r)
	both := []string{"Midwest", "West"}
	for i, region := range both {
		checkCompared(t, region, items[i], compareFromRows(rows, "Kisqali", []string{region}, both, e2i.Weeks-7, e2i.Weeks))
	}
	if got := num(t, r.AgentResult, "comparison", "weeks_compared"); got != 7 {
		t.Errorf("weeks_compared = %v, want 7: week 26 lacks Verzenio's West feed", got)
	}
}

// A question that compares nothing named gets no comparison, and its gap figures do not move.
func TestNoComparisonWithoutTwoNames(t *testing.T) {
	reg := registry(t)
	for _, q := range []string{
		"What caused the drop in NRx for Kisqali in Midwest?",
		"Compare Kisqali NBRx by prescriber decile across regions",
		"Why did Kisqali and Verzenio NRx drop in the Midwest?", // two brands, not a comparison
	} {
		r := call(t, reg, "gap_analyzer", newDispatch("gap_analyzer", e2i.ParseQuery(q)))
		if _, ok := r.AgentResult["comparison"]; ok {
			t.Errorf("%q: comparison %v", q, r.AgentResult["comparison"])
		}
	}
}

// The answer to a comparative question opens with the comparison, its numbers those of the
// data, and says the rest is about one brand.
func TestRunComparisonAnswer(t *testing.T) {
	rows := e2i.NewDataset().Rows()
	evs := runQuery(t, "Compare Kisqali and Verzenio NRx in the Midwest")
	if last := evs[len(evs)-1]; last.Kind != troupe.KindRunCompleted {
		t.Fatalf("run ended with %s: %+v", last.Kind, last.Data)
	}
	syn := dataOf[*troupe.Aggregation](evs, troupe.KindRunAggregated)[0].Synthesis
	if !strings.HasPrefix(syn, "Comparing Kisqali and Verzenio NRx in the Midwest over the last 8 weeks: ") {
		t.Errorf("the answer does not open with the comparison:\n%s", syn)
	}
	mw := []string{"Midwest"}
	for _, b := range []string{"Kisqali", "Verzenio"} {
		c := compareFromRows(rows, b, mw, mw, e2i.Weeks-7, e2i.Weeks)
		sign := "+"
		if c.change < 0 {
			sign = ""
		}
		want := fmt.Sprintf("%s %s a week (%.1f per 100 prescribers, %.1f%% of all brands' NRx; %s%.1f%% on the 8 weeks before, share %+.1f points)",
			b, thousands(c.perWeek), c.rate, 100*c.share, sign, 100*c.change, 100*c.shareChange)
		if !strings.Contains(syn, want) {
			t.Errorf("the answer does not hold %q:\n%s", want, syn)
		}
	}
	if !strings.Contains(syn, "The rest of this answer is about Kisqali only.") {
		t.Errorf("the answer does not say the rest is about Kisqali only:\n%s", syn)
	}
	if strings.Contains(syn, "one brand at a time") {
		t.Errorf("the answer says the brands were not compared:\n%s", syn)
	}
}

func thousands(f float64) string {
	s := fmt.Sprint(int(math.Round(f)))
	if len(s) > 3 {
		s = s[:len(s)-3] + "," + s[len(s)-3:]
	}
	return s
}
