package e2i

import (
	"math"
	"testing"
)

// A week one control region lacks (Verzenio's West has no week 26) leaves the log gap out that
// week: the mean of the other controls, larger regions, moved the gap by about 0.09 for no
// change in the target, about 1.5 times the planted effect, in the post period. Left out, the
// Midwest's planted Verzenio rise is found, significant, as the data plants it (about 6%).
func TestMissingControlWeekIsLeftOut(t *testing.T) {
	ds := NewDataset()
	for _, kpi := range []string{"NRx", "TRx"} {
		gap := ds.logGap("Verzenio", "Midwest", kpi, ds.others("Midwest"), 1, Deciles)
		if !math.IsNaN(gap[Weeks-1]) {
			t.Errorf("%s: week %d's gap is %.4f (week %d's %.4f), though the West has no week %d", kpi, Weeks, gap[Weeks-1], Weeks-1, gap[Weeks-2], Weeks)
		}
		e := ds.diffInDiff("Verzenio", "Midwest", kpi, ds.others("Midwest"), 0, 1, Deciles)
		if e.lo <= 0 || e.rel < 0.04 || e.rel > 0.08 {
			t.Errorf("%s: the Midwest's Verzenio change is %+.1f%% (95%% CI %+.1f%% to %+.1f%%) from week %d; want the planted rise of about 6%%, significant",
				kpi, 100*e.rel, 100*e.lo, 100*e.hi, e.changeWeek)
		}
	}
}
