package convention

import (
	"fmt"

	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// Scores returns the scores and outcomes that convention n bins for the
// n×k probabilities and labels (binary: one-column input, p1 in column
// 1), and their notion:
//
//   - top-label (the confidence max_k p_k against [argmax = label],
//     the first maximum on ties) for every library on multiclass input,
//     and for Calib, Hendrycks and RobustnessMetrics always;
//   - binary (p1 against the label) for one-column input under
//     Sklearn, Torchmetrics, TorchUncertainty and Relplot, whose binary
//     metrics take the positive class's probability;
//   - Netcal decides by the labels: at most two distinct labels make the
//     input binary (p1 of two columns; more columns are an error, as
//     netcal raises one).
func Scores(n Name, probs []float64, labels []int, k int, binary bool) (scores, outcomes []float64, nt notion.Notion, err error) {
	positive := false
	switch n {
	case Sklearn, Torchmetrics, TorchUncertainty, Relplot:
		positive = binary
	case Netcal:
		distinct := map[int]bool{}
		for _, y := range labels {
			distinct[y] = true
		}
		if len(distinct) <= 2 {
			if k > 2 {
				return nil, nil, "", fmt.Errorf("convention netcal: the labels take %d values, so netcal reads the input as binary, and refuses %d probability columns: %w", len(distinct), k, ErrUnsupported)
			}
			positive = true
		}
	}
	if positive {
		s, o := metric.ClassColumn(probs, labels, k, k-1)
		return s, o, notion.Binary, nil
	}
	s, o := metric.TopR(probs, labels, k, 1)
	return s, o, notion.TopLabel, nil
}

// CurveOf returns the reliability curve of the prediction set (n×k
// probabilities, labels, one-column input when binary, sample weights w)
// under convention n, of the scores Scores picks, in B bins; with the
// notion of those scores. Torchmetrics' multiclass confidences are
// float32 (NewCurve32).
func CurveOf(n Name, probs []float64, labels []int, k int, binary bool, w []float64, bins int, binning metric.Binning) (*Curve, notion.Notion, error) {
	s, o, nt, err := Scores(n, probs, labels, k, binary)
	if err != nil {
		return nil, "", err
	}
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
