package main

import (
	"encoding/json"
	"io"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/config"
)

// recordVersion is the version of the run record's shape; docs/run-record.md describes it.
// A change that removes or renames a field, or changes its meaning, makes a new version.
const recordVersion = 1

// runRecord is what `troupe run --output json` prints: everything the run recorded.
type runRecord struct {
	Version     int                 `json:"version"`
	Config      recordConfig        `json:"config"`
	Request     troupe.Request      `json:"request"`
	RunID       string              `json:"run_id"`
	Status      troupe.RunStatus    `json:"status"`
	ExitCode    int                 `json:"exit_code"`
	Outcome     *troupe.Outcome     `json:"outcome"`
	Plan        *troupe.Plan        `json:"plan"`
	Results     []*troupe.Result    `json:"results"`
	Aggregation *troupe.Aggregation `json:"aggregation"`
	Events      []troupe.Event      `json:"events"`
}

type recordConfig struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// recorder collects a run's events and prints the record at the end.
type recorder struct {
	w   io.Writer
	rec runRecord
}

func newRecorder(w io.Writer, f *config.File, req troupe.Request) *recorder {
	return &recorder{w: w, rec: runRecord{
		Version: recordVersion,
		Config:  recordConfig{Path: f.Path, Name: f.Name},
		Request: req,
		Results: []*troupe.Result{},
		Events:  []troupe.Event{},
	}}
}

func (r *recorder) event(ev troupe.Event) {
	r.rec.Events = append(r.rec.Events, ev)
	if r.rec.RunID == "" {
		r.rec.RunID = ev.RunID
	}
	switch d := ev.Data.(type) {
	case *troupe.Plan:
		r.rec.Plan = d
	case *troupe.Result:
		if ev.Parent == "" { // members of composites are in the events
			r.rec.Results = append(r.rec.Results, d)
		}
	case *troupe.Aggregation:
		r.rec.Aggregation = d
	}
}

func (r *recorder) end(o *troupe.Outcome, code int) int {
	r.rec.Outcome, r.rec.Status, r.rec.ExitCode = o, o.Status, code
	enc := json.NewEncoder(r.w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r.rec); err != nil {
		return exitFailed
	}
	return code
}

func (r *recorder) close() {}
