// Package bandwidth is `calib bandwidth` as a library: the choice of the
// kernel bandwidth h of one ECE^KDE notion on a prediction set
// (kde.SelectBandwidth on the set's probabilities, labels and weights) with
// the report the command prints, and the cache of those choices that
// several computations on one set share (an evaluation, a comparison, the
// report's bandwidth view):
//
//	r, err := bandwidth.Select(ctx, s, kde.Canonical, kde.BandwidthOptions{})
//	fmt.Println(r.Bandwidth) // the h maximising the leave-one-out likelihood
package bandwidth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// Report is the bandwidth selection of one notion on a set, as `calib
// bandwidth` prints it. Bandwidth, Objective, Grid and LogLik are the JSON
// contract; LogLik holds null where the objective is -Inf.
type Report struct {
	Bandwidth float64      `json:"bandwidth"`
	Objective string       `json:"objective"`
	Grid      []float64    `json:"grid"`
	LogLik    []data.Float `json:"loglik"`
	Notion    string       `json:"notion"`
	Index     int          `json:"index"` // of the best grid value
	Refined   bool         `json:"refined"`
	// LogLikAt is the objective at the selected bandwidth.
	LogLikAt data.Float `json:"loglik_at_bandwidth"`
	Excluded int        `json:"excluded"`
	// Warnings are the selection's (kde.Curve.Warnings: the best grid
	// value at an end of the grid), as text; Excluded counts the points
	// left out.
	Warnings []string `json:"warnings,omitempty"`
	N        int      `json:"n"`
	K        int      `json:"k"`
	// Provenance is the caller's record of how the report was made (see
	// evaluate.Evaluation.Provenance); not read here.
	Provenance *data.Provenance `json:"provenance,omitempty"`
}

// Select chooses the kernel bandwidth of notion on s with
// kde.SelectBandwidth (s's sample weights, o's objective, grid, refinement,
// workers and progress; ctx cancels it) and returns its report. A set of
// fewer than 2 samples gives a *data.Error wrapping data.ErrTooFew; the
// errors of the selection name s's file.
func Select(ctx context.Context, s *data.Set, notion kde.Notion, o kde.BandwidthOptions) (*Report, error) {
	if err := s.Require(2, "bandwidth selection"); err != nil {
		return nil, err
	}
	cv, err := kde.SelectBandwidth(ctx, notion, s.Probs, s.Labels, s.K, s.Weights, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File, err)
	}
	r := &Report{Bandwidth: cv.Bandwidth, Objective: cv.Objective.String(), Grid: cv.Grid, Notion: notion.String(),
		Index: cv.Index, Refined: cv.Refined, LogLikAt: data.Float(cv.LogLik), Excluded: cv.Excluded, N: s.N, K: s.K}
	for _, w := range cv.Warnings {
		r.Warnings = append(r.Warnings, w.Error())
	}
	for _, v := range cv.GridLL {
		r.LogLik = append(r.LogLik, data.Float(v))
	}
	return r, nil
}

// WriteJSON writes the report as one JSON object on one line.
func (r *Report) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// WriteText writes the report as `calib bandwidth` prints it: the selected
// bandwidth and how it was found, the warnings, and the objective at every
// grid value.
func (r *Report) WriteText(w io.Writer) error {
	how := "best grid value"
	if r.Refined {
		how = "refinement of the best grid value"
	}
	fmt.Fprintf(w, "%s bandwidth (n = %d, K = %d), objective %s\n", r.Notion, r.N, r.K, r.Objective)
	fmt.Fprintf(w, "selected h = %.6g (%s), objective %.6f\n", r.Bandwidth, how, float64(r.LogLikAt))
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	if r.Excluded > 0 {
		fmt.Fprintf(w, "%d points with zero leave-one-out density at every h were left out\n", r.Excluded)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "h\tobjective\t")
	for i, h := range r.Grid {
		mark := ""
		if i == r.Index {
			mark = "<- best grid value"
		}
		fmt.Fprintf(tw, "%.6g\t%.6f\t%s\n", h, float64(r.LogLik[i]), mark)
	}
	return tw.Flush()
}

// Cache holds the leave-one-out selection of each notion of one set, so
// that several computations on the same set select each once
// (evaluate.Options.Bandwidths). A nil Cache caches nothing.
type Cache map[kde.Notion]*kde.Curve

// Curve returns the cached leave-one-out selection of notion on s, or
// computes it with kde.SelectBandwidth (and caches it when o asks for the
// default selection: the LOO objective on the default grid, refined, at
// the default tolerance, by the series).
func (c Cache) Curve(ctx context.Context, notion kde.Notion, s *data.Set, o kde.BandwidthOptions) (*kde.Curve, error) {
	cacheable := c != nil && o.Objective == kde.LOO && o.Grid == nil && !o.NoRefine && o.Tolerance == 0 && !o.Exact
	if cacheable {
		if cv, ok := c[notion]; ok {
			return cv, nil
		}
	}
	cv, err := kde.SelectBandwidth(ctx, notion, s.Probs, s.Labels, s.K, s.Weights, o)
	if err == nil && cacheable {
		c[notion] = cv
	}
	return cv, err
}
