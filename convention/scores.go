package convention

import (
	"fmt"

	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// View is which scores a convention bins for a prediction set: Binary,
// p1 against the label; else top-label, the confidence max_k p_k against
// [argmax = label] (the first maximum on ties).
type View struct{ Binary bool }

// ViewOf returns the view convention n takes of the n×k probabilities
// and labels (binary: one-column input, p1 in column 1):
//
//   - top-label for every library on multiclass input, and for Calib,
//     Hendrycks and RobustnessMetrics always;
//   - binary for one-column input under Sklearn, Torchmetrics,
//     TorchUncertainty and Relplot, whose binary metrics take the
//     positive class's probability;
//   - Netcal decides by the labels: at most two distinct labels make the
//     input binary (p1 of two columns; more columns are an error, as
//     netcal raises one).
//
// A bootstrap resample keeps the view of the whole set (netcal would
// otherwise read a resample that misses a rare class as binary).
func ViewOf(n Name, labels []int, k int, binary bool) (View, error) {
	switch n {
	case Sklearn, Torchmetrics, TorchUncertainty, Relplot:
		return View{Binary: binary}, nil
	case Netcal:
		distinct := map[int]bool{}
		for _, y := range labels {
			distinct[y] = true
		}
		if len(distinct) <= 2 {
			if k > 2 {
				return View{}, fmt.Errorf("convention netcal: the labels take %d values, so netcal reads the input as binary, and refuses %d probability columns: %w", len(distinct), k, ErrUnsupported)
			}
			return View{Binary: true}, nil
		}
	}
	return View{}, nil
}

// Scores returns the scores and outcomes of the view of the n×k
// probabilities and labels, and their notion.
func (v View) Scores(probs []float64, labels []int, k int) (scores, outcomes []float64, nt notion.Notion) {
	if v.Binary {
		s, o := metric.ClassColumn(probs, labels, k, k-1)
		return s, o, notion.Binary
	}
	s, o := metric.TopR(probs, labels, k, 1)
	return s, o, notion.TopLabel
}

// CurveOf returns the reliability curve of the prediction set (n×k
// probabilities, labels, one-column input when binary, sample weights w)
// under convention n, of the scores of its view (ViewOf), in B bins; with
// the notion of those scores.
func CurveOf(n Name, probs []float64, labels []int, k int, binary bool, w []float64, bins int, binning metric.Binning) (*Curve, notion.Notion, error) {
	v, err := ViewOf(n, labels, k, binary)
	if err != nil {
		return nil, "", err
	}
	return v.Curve(n, probs, labels, k, w, bins, binning)
}

// Curve returns the reliability curve of the view's scores under
// convention n (CurveOf with the view fixed). Torchmetrics' multiclass
// confidences are float32 (NewCurve32).
func (v View) Curve(n Name, probs []float64, labels []int, k int, w []float64, bins int, binning metric.Binning) (*Curve, notion.Notion, error) {
	s, o, nt := v.Scores(probs, labels, k)
	if (n == Torchmetrics || n == TorchUncertainty) && nt == notion.TopLabel {
		if w != nil {
			return nil, "", fmt.Errorf("convention %s: sample weights: %w", n, ErrUnsupported)
		}
		if binning != metric.EqualWidth {
			return nil, "", fmt.Errorf("convention %s: equal-mass bins: %w", n, ErrUnsupported)
		}
		c, err := NewCurve32(s, o, bins)
		return c, nt, err
	}
	c, err := NewCurve(n, s, o, w, bins, binning)
	return c, nt, err
}
