package evaluate

import (
	"encoding/json"

	"github.com/calib-dev/calib/notion"
)

// WarningKind says what a Warning is about.
type WarningKind int

const (
	// EstimatorWarning is passed on from an estimator (kde: a bandwidth at
	// the edge of its grid, points left out, a witness that could not use
	// every split).
	EstimatorWarning WarningKind = iota
	// FewNeighbours: each kernel regression of ECE^KDE rests on about one
	// other sample, so the estimate measures label noise.
	FewNeighbours
	// OverSmoothed: each kernel regression averages most of the data, so
	// the estimate measures the spread of the predictions.
	OverSmoothed
	// FixedBandwidthOff: a fixed bandwidth is far from what the data
	// support (leave-one-out likelihood at h/10 or 10h).
	FixedBandwidthOff
	// SparseCells: the canonical binned metrics' cells hold too few
	// samples to mean anything.
	SparseCells
	// SmallCellMCE: the canonical MCE is attained in a cell of a few
	// samples.
	SmallCellMCE
	// RoundedZeros: exact zeros in a file whose values were rounded.
	RoundedZeros
	// ApproximateEdges: a stream's data-dependent bin edges were taken at
	// the ends of sketch buckets (too many distinct scores near the
	// edges), so some rows may lie in other bins than in memory.
	ApproximateEdges
	// SkippedInput: files of the input were skipped (a stream's shards
	// without rows, a directory's non-data files).
	SkippedInput
)

// Warning is a caution about one number (Metric and Notion say which) or
// about the input as a whole (Metric ""). Its Error is the text calib
// prints under the table and writes in the JSON.
type Warning struct {
	Kind   WarningKind
	Metric Metric
	Notion notion.Notion
	Text   string
}

func (w *Warning) Error() string { return w.Text }

// Warnings is a list of warnings, typically *Warning values (test them with
// errors.As). It encodes in JSON as the list of their texts, the frozen
// "warnings" key.
type Warnings []error

// Strings returns the texts of the warnings.
func (ws Warnings) Strings() []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Error()
	}
	return out
}

// MarshalJSON writes the texts.
func (ws Warnings) MarshalJSON() ([]byte, error) { return json.Marshal(ws.Strings()) }

// UnmarshalJSON reads texts as *Warning values of kind EstimatorWarning
// (the kind is not in the JSON).
func (ws *Warnings) UnmarshalJSON(b []byte) error {
	var texts []string
	if err := json.Unmarshal(b, &texts); err != nil {
		return err
	}
	*ws = nil
	for _, t := range texts {
		*ws = append(*ws, &Warning{Text: t})
	}
	return nil
}

// warn returns one *Warning.
func warn(kind WarningKind, text string) *Warning { return &Warning{Kind: kind, Text: text} }

// AllWarnings returns every warning of the evaluation: those about the
// input, then each Result's in order, with Metric and Notion filled in.
func (out *Evaluation) AllWarnings() []error {
	all := append([]error(nil), out.Warnings...)
	for _, e := range out.Results {
		for _, w := range e.Warnings {
			if tw, ok := w.(*Warning); ok {
				c := *tw
				c.Metric, c.Notion = e.Metric, e.Notion
				w = &c
			}
			all = append(all, w)
		}
	}
	return all
}
