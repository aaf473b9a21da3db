package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// CurveBin is one bin of a reliability curve's data.
type CurveBin struct {
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Count    float64 `json:"count"`     // scores in the bin (their weight with sample weights)
	MeanPred float64 `json:"mean_pred"` // mean score (0 when empty)
	Freq     float64 `json:"freq"`      // observed frequency: mean outcome (0 when empty)
	// Interval is the 95 % Wilson score interval of Freq with n = Count
	// (nil for an empty bin).
	Interval []float64 `json:"interval,omitempty"`
	Skipped  bool      `json:"skipped,omitempty"` // left out of the convention's numbers
}

// CurveData is the data of a reliability diagram under a convention, as
// `calib plot reliability ... -o FILE.json` writes it: which scores
// (notion, and class for one class's column), the convention and its
// bins, and the numbers the convention computes from them.
type CurveData struct {
	Kind       string          `json:"kind"` // "reliability"
	Convention convention.Name `json:"convention"`
	Notion     notion.Notion   `json:"notion"`
	Class      *int            `json:"class,omitempty"`
	Binning    string          `json:"binning"`
	N          int             `json:"n"`
	Total      float64         `json:"total"` // the divisor of the bins' shares
	ECE        float64         `json:"ece"`   // sum over bins that count of (count/total) |freq - mean_pred|
	MCE        float64         `json:"mce"`
	Bins       []CurveBin      `json:"bins"`
	File       string          `json:"file,omitempty"`
}

// CurveDataOf returns the reliability curve's data of s under convention
// n: of the scores the convention bins (convention.ViewOf) when class < 0,
// else of p_class against [label = class]; with B bins of the binning.
func CurveDataOf(s *data.Set, class int, n convention.Name, bins int, binning metric.Binning) (*CurveData, error) {
	var cv *convention.Curve
	var nt notion.Notion
	var err error
	d := &CurveData{Kind: "reliability", Convention: n, Binning: binning.String(), N: s.N, File: s.File}
	if class < 0 {
		cv, nt, err = convention.CurveOf(n, s.Probs, s.Labels, s.K, s.Binary, s.Weights, bins, binning)
	} else {
		sc, oc, _, _, serr := diagramScores(s, class, Options{})
		if serr != nil {
			return nil, serr
		}
		cv, err = convention.NewCurve(n, sc, oc, s.Weights, bins, binning)
		nt, d.Class = notion.ClassWise, &class
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reliability data: %w", s.File, err)
	}
	if n == convention.Hendrycks {
		d.Binning = "equal_count"
	}
	d.Notion, d.Total, d.ECE, d.MCE = nt, cv.Total, cv.ECE(1), cv.MCE()
	for _, b := range cv.Bins {
		cb := CurveBin{Lo: b.Lo, Hi: b.Hi, Count: b.Count, MeanPred: b.Score, Freq: b.Freq, Skipped: b.Skipped}
		if b.Count > 0 {
			lo, hi := wilson(b.Freq, b.Count, 1.959963984540054)
			cb.Interval = []float64{lo, hi}
		}
		d.Bins = append(d.Bins, cb)
	}
	return d, nil
}

// wilson is the Wilson score interval of a proportion f of n at the
// normal quantile z.
func wilson(f, n, z float64) (float64, float64) {
	z2 := z * z
	c := (f + z2/(2*n)) / (1 + z2/n)
	h := z / (1 + z2/n) * math.Sqrt(f*(1-f)/n+z2/(4*n*n))
	return max(0, c-h), min(1, c+h)
}

// SmoothCurveData is the data of the smooth reliability diagram, as
// `calib plot smooth ... -o FILE.json` writes it (smooth.Curve defines
// every number).
type SmoothCurveData struct {
	Kind    string        `json:"kind"` // "smooth"
	Notion  notion.Notion `json:"notion"`
	Class   *int          `json:"class,omitempty"`
	N       int           `json:"n"`
	Sigma   float64       `json:"sigma"`
	SmECE   float64       `json:"smece"`
	T       []float64     `json:"t"`
	Mean    []float64     `json:"mean"`
	Density []float64     `json:"density"`
	Lo      []float64     `json:"lo,omitempty"`
	Hi      []float64     `json:"hi,omitempty"`
	Level   float64       `json:"level,omitempty"`
	File    string        `json:"file,omitempty"`
}

// SmoothCurveDataOf returns the smooth reliability diagram's data of s's
// top-label confidence (class < 0) or of p_class (SmoothReliabilityOf).
func SmoothCurveDataOf(ctx context.Context, s *data.Set, class int, o Options) (*SmoothCurveData, error) {
	r, err := SmoothReliabilityOf(ctx, s, class, o)
	if err != nil {
		return nil, err
	}
	c := r.Curve
	d := &SmoothCurveData{Kind: "smooth", Notion: notion.TopLabel, N: s.N, Sigma: c.Sigma, SmECE: c.Value, T: c.T, Mean: c.Mean,
		Density: c.Density, Lo: c.Lo, Hi: c.Hi, Level: c.Level, File: s.File}
	if class >= 0 {
		d.Notion, d.Class = notion.ClassWise, &class
	}
	return d, nil
}

// WriteJSON writes v (a CurveData or SmoothCurveData) as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}
