package feasibility

import (
	"embed"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/projects.csv data/risks.csv data/cases.json
var dataFS embed.FS

// Project is one finished project of the reference class: what it was estimated to cost and
// take, and what it did.
type Project struct {
	ID             string
	Category       string
	EstimatedCostK float64
	ActualCostK    float64
	EstimatedWeeks float64
	ActualWeeks    float64
}

// Risk is a risk factor a proposal can name: how likely it strikes and, when it does, the
// fraction it adds to cost and to duration.
type Risk struct {
	Name        string
	Probability float64
	CostImpact  float64
	DelayImpact float64
	Description string
}

// Proposal is a feasibility question: a project, its estimates, and the budget and deadline
// it must meet.
type Proposal struct {
	ID             string   `json:"id"`
	Question       string   `json:"question"`
	Category       string   `json:"category"`
	EstimatedCostK float64  `json:"estimated_cost_k"`
	BudgetK        float64  `json:"budget_k"`
	EstimatedWeeks float64  `json:"estimated_weeks"`
	DeadlineWeeks  float64  `json:"deadline_weeks"`
	Risks          []string `json:"risks"`
}

// Dataset is the shipped reference data: past projects, risk factors and example proposals.
// It is read-only once loaded and safe for concurrent use.
type Dataset struct {
	Projects []Project
	Risks    map[string]Risk
	Cases    []Proposal
}

// DefaultDataset loads the shipped data (52 past projects in four categories, seven risk
// factors, three proposals). Each call parses it anew.
func DefaultDataset() *Dataset {
	open := func(name string) io.Reader {
		f, err := dataFS.Open("data/" + name)
		if err != nil {
			panic(err) // embedded at build time
		}
		return f
	}
	ds, err := LoadDataset(open("projects.csv"), open("risks.csv"), open("cases.json"))
	if err != nil {
		panic(err) // the shipped data is tested
	}
	return ds
}

// LoadDataset parses the three files. Errors name the file, line and column.
func LoadDataset(projects, risks, cases io.Reader) (*Dataset, error) {
	ds := &Dataset{Risks: map[string]Risk{}}
	var problems []string
	rows, err := readCSV("projects.csv", projects, []string{"id", "category", "estimated_cost_k", "actual_cost_k", "estimated_weeks", "actual_weeks"})
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		p := Project{ID: r[0], Category: r[1]}
		nums, errs := floats("projects.csv", i+2, r[2:], []string{"estimated_cost_k", "actual_cost_k", "estimated_weeks", "actual_weeks"})
		problems = append(problems, errs...)
		if len(errs) == 0 && (nums[0] == 0 || nums[2] == 0) {
			errs = []string{fmt.Sprintf("projects.csv:%d: estimates must be positive: an overrun is actual / estimated", i+2)}
			problems = append(problems, errs...)
		}
		if len(errs) == 0 {
			p.EstimatedCostK, p.ActualCostK, p.EstimatedWeeks, p.ActualWeeks = nums[0], nums[1], nums[2], nums[3]
			ds.Projects = append(ds.Projects, p)
		}
	}
	rows, err = readCSV("risks.csv", risks, []string{"risk", "probability", "cost_impact", "delay_impact", "description"})
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		nums, errs := floats("risks.csv", i+2, r[1:4], []string{"probability", "cost_impact", "delay_impact"})
		problems = append(problems, errs...)
		if len(errs) == 0 {
			if nums[0] > 1 {
				problems = append(problems, fmt.Sprintf("risks.csv:%d: probability %g is above 1", i+2, nums[0]))
			}
			ds.Risks[r[0]] = Risk{Name: r[0], Probability: nums[0], CostImpact: nums[1], DelayImpact: nums[2], Description: r[4]}
		}
	}
	dec := json.NewDecoder(cases)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ds.Cases); err != nil {
		return nil, fmt.Errorf("feasibility: cases.json: %w", err)
	}
	for i, c := range ds.Cases {
		problems = append(problems, ds.Check(c, fmt.Sprintf("cases.json: [%d]", i))...)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("feasibility: %s", strings.Join(problems, "; "))
	}
	return ds, nil
}

// Check returns the problems of p against the dataset, each prefixed with where.
func (ds *Dataset) Check(p Proposal, where string) []string {
	var out []string
	if len(ds.Reference(p.Category)) < 2 {
		out = append(out, fmt.Sprintf("%s.category: %q has fewer than 2 reference projects", where, p.Category))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"estimated_cost_k", p.EstimatedCostK}, {"budget_k", p.BudgetK}, {"estimated_weeks", p.EstimatedWeeks}, {"deadline_weeks", p.DeadlineWeeks}} {
		if !(f.v > 0) {
			out = append(out, fmt.Sprintf("%s.%s: must be positive, got %g", where, f.name, f.v))
		}
	}
	for j, r := range p.Risks {
		if _, ok := ds.Risks[r]; !ok {
			out = append(out, fmt.Sprintf("%s.risks[%d]: unknown risk %q", where, j, r))
		}
		// A risk named twice would strike twice in a draw, and the judges' risk_drivers
		// would name it twice, which their schema refuses (uniqueItems): every replicate
		// invalid for a typo in the request.
		if i := slices.Index(p.Risks, r); i < j {
			out = append(out, fmt.Sprintf("%s.risks[%d]: %q is already risks[%d]", where, j, r, i))
		}
	}
	return out
}

// Reference returns the past projects of category, in file order.
func (ds *Dataset) Reference(category string) []Project {
	var out []Project
	for _, p := range ds.Projects {
		if p.Category == category {
			out = append(out, p)
		}
	}
	return out
}

// Case returns the shipped proposal with id.
func (ds *Dataset) Case(id string) (Proposal, bool) {
	i := slices.IndexFunc(ds.Cases, func(p Proposal) bool { return p.ID == id })
	if i < 0 {
		return Proposal{}, false
	}
	return ds.Cases[i], true
}

func readCSV(name string, r io.Reader, header []string) ([][]string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	all, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("feasibility: %s: %w", name, err)
	}
	if len(all) == 0 || !slices.Equal(all[0], header) {
		return nil, fmt.Errorf("feasibility: %s:1: header must be %s", name, strings.Join(header, ","))
	}
	return all[1:], nil
}

func floats(file string, line int, cells, names []string) ([]float64, []string) {
	var out []float64
	var problems []string
	for i, c := range cells {
		v, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
		if err != nil || v < 0 {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: want a non-negative number, got %q", file, line, names[i], c))
			continue
		}
		out = append(out, v)
	}
	return out, problems
}
