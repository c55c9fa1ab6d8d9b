package e2i

import (
	"math"
	"math/rand/v2"
	"slices"
)

// The dataset's shape and its planted effect. Tests and readers can check an agent's findings
// against them; the agents themselves never read them — they find the effect in the data.
const (
	// Weeks is the number of weeks of data, numbered 1 to Weeks.
	Weeks = 26
	// Deciles is the number of prescriber deciles, 1 (lightest prescribers) to 10 (heaviest).
	Deciles = 10
	// PlantedWeek is the first week of the Midwest access restriction on Kisqali.
	PlantedWeek = 18
	// PlantedDrop is the fraction of Kisqali NRx the restriction removes in the Midwest,
	// volume-weighted over deciles: heavier prescribers lose more (6% in decile 1 up to 15%
	// in decile 10).
	PlantedDrop = 0.12
)

// kpis are the KPIs the dataset holds.
func kpis() []string { return []string{"NRx", "TRx", "NBRx"} }

// Row is one brand × region × week × prescriber decile observation: weekly new (NRx), total
// (TRx) and new-to-brand (NBRx) prescriptions, whole numbers.
type Row struct {
	Brand  string
	Region string
	Week   int // 1 to Weeks
	Decile int // 1 to Deciles
	NRx    float64
	TRx    float64
	NBRx   float64
}

// Dataset is a small synthetic but internally consistent prescription dataset for three
// oncology and haematology brands over four US regions, built by NewDataset. It is immutable
// and safe for concurrent use; the zero value holds no data.
//
// Its planted story: from week PlantedWeek a payer access restriction in the Midwest cuts
// Kisqali NRx by about PlantedDrop (more for heavy prescribers) while the other regions go on
// growing, and Verzenio, the competing CDK4/6 inhibitor, gains about 6% in the Midwest. Two
// feeds are imperfect: four Fabhalta rows in the South are missing and Verzenio's West feed
// is a week late.
type Dataset struct {
	brands      []string
	regions     []string
	prescribers map[string]float64 // target prescribers per region
	rows        []Row
	// cells[b][r][w][d] indexes rows, or is -1 for a missing observation.
	cells [][][][Deciles]int
}

// NewDataset generates the dataset. It is deterministic: every call returns equal data, from a
// fixed-seed PCG source local to the call.
func NewDataset() *Dataset {
	rng := rand.New(rand.NewPCG(0x000e21, 0x7831460252a8ab86))
	ds := &Dataset{
		brands:  []string{"Kisqali", "Fabhalta", "Verzenio"},
		regions: []string{"Midwest", "Northeast", "South", "West"},
		prescribers: map[string]float64{
			"Midwest": 2500, "Northeast": 2800, "South": 3100, "West": 2300,
		},
	}
	// Weekly NRx per 100 target prescribers at week 1, and weekly growth.
	rate := map[string]map[string]float64{
		"Kisqali":  {"Midwest": 50, "Northeast": 48, "South": 47, "West": 49},
		"Fabhalta": {"Midwest": 9, "Northeast": 11, "South": 8, "West": 10},
		"Verzenio": {"Midwest": 41, "Northeast": 43, "South": 44, "West": 40},
	}
	growth := map[string]float64{"Kisqali": 0.006, "Fabhalta": 0.015, "Verzenio": 0.002}
	missing := func(brand, region string, week, decile int) bool {
		switch {
		case brand == "Fabhalta" && region == "South":
			return (week == 9 || week == 10) && (decile == 2 || decile == 5)
		case brand == "Verzenio" && region == "West":
			return week == Weeks
		}
		return false
	}
	const volume = Deciles * (Deciles + 1) / 2 // decile d writes d/volume of a region's NRx

	ds.cells = make([][][][Deciles]int, len(ds.brands))
	for bi, brand := range ds.brands {
		ds.cells[bi] = make([][][Deciles]int, len(ds.regions))
		for ri, region := range ds.regions {
			ds.cells[bi][ri] = make([][Deciles]int, Weeks)
			base := rate[brand][region] * ds.prescribers[region] / 100
			for w := 1; w <= Weeks; w++ {
				season := 1 + 0.02*math.Sin(2*math.Pi*float64(w)/13)
				local := 1 + 0.015*rng.NormFloat64() // a shock shared by the region's deciles
				level := base * math.Pow(1+growth[brand], float64(w-1)) * season * local
				for d := 1; d <= Deciles; d++ {
					effect := 1.0
					if region == "Midwest" && w >= PlantedWeek {
						switch brand {
						case "Kisqali":
							effect = 1 - (0.06 + 0.01*float64(d-1))
						case "Verzenio":
							effect = 1.06
						}
					}
					nrx := math.Round(level * float64(d) / volume * effect * (1 + 0.04*rng.NormFloat64()))
					trx := math.Round(nrx * 3.2 * (1 + 0.02*rng.NormFloat64()))
					nbrx := math.Round(nrx * 0.42 * (1 + 0.03*rng.NormFloat64()))
					if missing(brand, region, w, d) {
						ds.cells[bi][ri][w-1][d-1] = -1
						continue
					}
					ds.cells[bi][ri][w-1][d-1] = len(ds.rows)
					ds.rows = append(ds.rows, Row{Brand: brand, Region: region, Week: w, Decile: d,
						NRx: max(nrx, 0), TRx: max(trx, 0), NBRx: max(nbrx, 0)})
				}
			}
		}
	}
	return ds
}

// Brands returns the brands, Kisqali first.
func (ds *Dataset) Brands() []string { return slices.Clone(ds.brands) }

// Regions returns the regions in alphabetical order.
func (ds *Dataset) Regions() []string { return slices.Clone(ds.regions) }

// KPIs returns the KPIs every row holds.
func (ds *Dataset) KPIs() []string { return kpis() }

// Prescribers returns the number of target prescribers in region, 0 for an unknown region.
func (ds *Dataset) Prescribers(region string) float64 { return ds.prescribers[region] }

// Rows returns every observation, ordered by brand, region, week and decile. Missing
// observations are absent.
func (ds *Dataset) Rows() []Row { return slices.Clone(ds.rows) }

// ExpectedRows is how many rows a complete dataset would hold.
func (ds *Dataset) ExpectedRows() int { return len(ds.brands) * len(ds.regions) * Weeks * Deciles }

func (r *Row) value(kpi string) float64 {
	switch kpi {
	case "TRx":
		return r.TRx
	case "NBRx":
		return r.NBRx
	}
	return r.NRx
}

func (ds *Dataset) brandIndex(brand string) int   { return slices.Index(ds.brands, brand) }
func (ds *Dataset) regionIndex(region string) int { return slices.Index(ds.regions, region) }

// cell returns the row of one observation, or nil when it is missing or unknown.
func (ds *Dataset) cell(brand, region string, week, decile int) *Row {
	bi, ri := ds.brandIndex(brand), ds.regionIndex(region)
	if bi < 0 || ri < 0 || week < 1 || week > Weeks || decile < 1 || decile > Deciles {
		return nil
	}
	i := ds.cells[bi][ri][week-1][decile-1]
	if i < 0 {
		return nil
	}
	return &ds.rows[i]
}

// Series returns kpi (NRx, TRx or NBRx; anything else reads NRx) of brand in region for each
// week (index 0 is week 1), summed over the deciles in [lo, hi]. A week missing some deciles is
// scaled up by the share those deciles hold in the region's complete weeks; a week missing all
// of them, or an unknown brand or region, is NaN.
func (ds *Dataset) Series(brand, region, kpi string, lo, hi int) []float64 {
	out := make([]float64, Weeks)
	share := make([]float64, Deciles+1) // decile → share of the [lo, hi] volume in complete weeks
	var total float64
	for w := 1; w <= Weeks; w++ {
		complete := true
		for d := lo; d <= hi; d++ {
			complete = complete && ds.cell(brand, region, w, d) != nil
		}
		if !complete {
			continue
		}
		for d := lo; d <= hi; d++ {
			v := ds.cell(brand, region, w, d).value(kpi)
			share[d] += v
			total += v
		}
	}
	for d := lo; d <= hi; d++ {
		if total > 0 {
			share[d] /= total
		} else {
			share[d] = 1 / float64(hi-lo+1)
		}
	}
	for w := 1; w <= Weeks; w++ {
		var sum, covered float64
		for d := lo; d <= hi; d++ {
			if r := ds.cell(brand, region, w, d); r != nil {
				sum += r.value(kpi)
				covered += share[d]
			}
		}
		out[w-1] = math.NaN()
		if covered > 0 {
			out[w-1] = sum / covered
		}
	}
	return out
}

// Total is Series over every decile.
func (ds *Dataset) Total(brand, region, kpi string) []float64 {
	return ds.Series(brand, region, kpi, 1, Deciles)
}
