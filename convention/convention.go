// Package convention reproduces the binned calibration numbers other
// libraries print: each Name is one library's definition of the binned
// ECE, MCE and reliability curve (which scores it bins, where a score of
// 0, 1 or on an edge falls, whether empty bins count, which bins are
// skipped, what the shares are divided by) and of its "ACE", written from
// the library's source and checked against the library run on the same
// data (testdata/reference.json, by scripts/convention_reference.py) or
// against the values its own tests publish.
//
// A Curve is the reliability curve of one convention: its bins, in the
// library's layout (extra bins included), from which ECE, MCE and
// Average follow. ViewOf says which scores the library bins for a
// prediction set (the top-label confidence, or the positive class's
// probability for binary input).
//
// The libraries, at the versions read (see docs/other-tools.md):
//
//   - Calib: calib's own binned ECE (metric.Bins): bins (lo, hi], the
//     first [0, hi]; sample weights.
//   - Sklearn: scikit-learn's calibration_curve (1.2 to 1.7): edges
//     linspace(0, 1, B+1) or np.percentile, a score on an interior edge in
//     the lower bin (np.searchsorted(edges[1:-1], x)); the ECE over the
//     non-empty bins weighted by their weight, as the proposed
//     calibration_error (PR 34261) documents; one-column input measures
//     p1 against the label (scikit-learn is binary only).
//   - Torchmetrics: torchmetrics' BinaryCalibrationError and
//     MulticlassCalibrationError (and torch-uncertainty's
//     CalibrationError): bins [e_k, e_k+1) from torch.linspace, a
//     confidence of exactly 1 in an extra bin (torchmetrics issue 3510);
//     multiclass confidences in float32 (its .float()), one-column input
//     p1 against the label in its own precision; the MCE over every slot
//     (empty ones 0). No sample weights.
//   - Netcal: netcal 1.3's ECE, MCE and ACE (the Average Calibration
//     Error, the unweighted mean over non-empty bins): scores clipped to
//     [eps, 1 - eps], bins [a, b) but the last [a, 1]; input whose labels
//     take at most 2 values is binary (p1 of two columns, the label as
//     outcome), else top-label. No sample weights.
//   - Relplot: relplot's binnedECE: bin int(f / (1/B)) of B + 1 (a score
//     of 1 in a bin of its own), |sum of residuals| per bin over n.
//   - Hendrycks: calib_err of outlier-exposure (and of Humanity's Last
//     Exam): bins of 100 consecutive sorted confidences, the last taking
//     the remainder and left out on purpose, shares over all n; p = 2
//     reported as its root. Top-label always. No sample weights.
//   - RobustnessMetrics: robustness_metrics' ExpectedCalibrationError
//     (equal-width bins floor(B x) clipped to the last: 1 in the last
//     bin, an interior edge in the upper bin; top-label always; computed
//     here in float64 where Keras uses float32) and its
//     GeneralCalibrationError for ACE and TACE.
//   - TorchUncertainty: torch-uncertainty's AdaptiveCalibrationError (the
//     top-label ACE of equal-count chunks of the sorted confidences);
//     its ECE is torchmetrics'.
package convention

import (
	"slices"
	"strings"

	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/internal/textenum"
)

// Name names a convention: a library's definition of the binned
// numbers.
type Name string

// The conventions.
const (
	Calib             Name = "calib"
	Sklearn           Name = "sklearn"
	Torchmetrics      Name = "torchmetrics"
	Netcal            Name = "netcal"
	Relplot           Name = "relplot"
	Hendrycks         Name = "hendrycks"
	RobustnessMetrics Name = "robustness_metrics"
	TorchUncertainty  Name = "torch_uncertainty"
)

// Names returns the conventions of the binned ECE and MCE
// (--convention), calib's first.
func Names() []Name { return slices.Clone(conventionNames) }

var conventionNames = []Name{Calib, Sklearn, Torchmetrics, Netcal, Relplot, Hendrycks, RobustnessMetrics, TorchUncertainty}

// String returns the name.
func (n Name) String() string { return string(n) }

// MarshalText implements encoding.TextMarshaler.
func (n Name) MarshalText() ([]byte, error) { return []byte(n), nil }

// UnmarshalText implements encoding.TextUnmarshaler: a name of Names (any
// case, '-' for '_'; "" is Calib); others are refused, listing the valid
// ones.
func (n *Name) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err == nil {
		*n = v
	}
	return err
}

// Parse returns the convention named s under the one rule of calib's
// named enumerations (internal/textenum: any case, '-' for '_'), "" for
// Calib; torch-uncertainty and scikit-learn are read too.
func Parse(s string) (Name, error) {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_") {
	case "":
		return Calib, nil
	case "torchuncertainty":
		return TorchUncertainty, nil
	case "scikit_learn":
		return Sklearn, nil
	}
	words := make([]string, len(conventionNames))
	for i, x := range conventionNames {
		words[i] = string(x)
	}
	i, err := textenum.Parse("convention", s, words)
	if err != nil {
		return "", pkgerr.Errorf("convention", "%w", err)
	}
	return conventionNames[i], nil
}

// Weighted reports whether the convention takes sample weights (the
// libraries that have none refuse them here rather than ignore them).
func (n Name) Weighted() bool { return n == Calib || n == Sklearn || n == Relplot }

// Edges says, in words, which bin a score falls in under the convention
// (the bin_edges key of calib's entries).
func (n Name) Edges() string {
	switch n {
	case Sklearn:
		return "(lo, hi], first bin [0, hi] (np.searchsorted(edges[1:-1], x))"
	case Torchmetrics, TorchUncertainty:
		return "[lo, hi), a score of 1 in an extra bin (torch.bucketize right=True)"
	case Netcal:
		return "[lo, hi), last bin [lo, 1], scores clipped to [eps, 1-eps]"
	case Relplot:
		return "bin int(x / (1/B)) of B+1, a score of 1 in the last"
	case Hendrycks:
		return "100 consecutive sorted scores per bin, the last bin (with the remainder) left out"
	case RobustnessMetrics:
		return "floor(B x) clipped to [0, B-1]: [lo, hi), 1 in the last bin"
	}
	return "(lo, hi], first bin [0, hi]"
}
