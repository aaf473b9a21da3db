package convention_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
)

// reference is testdata/reference.json: what each library returned on
// the real sets, written by scripts/convention_reference.py.
type reference struct {
	Cases []struct {
		Set, Split, View string
		Bins             int
		SklearnUniform   *curve             `json:"sklearn_uniform"`
		SklearnQuantile  *curve             `json:"sklearn_quantile"`
		Torchmetrics     map[string]float64 `json:"torchmetrics"`
		Netcal           map[string]float64 `json:"netcal"`
		Relplot          *float64           `json:"relplot_binned_ece"`
		Hendrycks        map[string]float64 `json:"hendrycks"`
	} `json:"cases"`
}

type curve struct {
	ProbTrue []float64 `json:"prob_true"`
	ProbPred []float64 `json:"prob_pred"`
}

// set loads a real test set, or its binary view: p = the probability of
// class 0, outcome [label == 0], as one-column input.
func set(t *testing.T, name, split, view string) (probs []float64, labels []int, k int, binary bool) {
	t.Helper()
	d := "../testdata/logits/" + name + "/" + split
	s, err := data.Load(d+"_logits.npy", data.Options{Labels: d + "_labels.npy", Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	if view == "multiclass" {
		return s.Probs, s.Labels, s.K, false
	}
	probs, labels = make([]float64, 2*s.N), make([]int, s.N)
	for i := range s.N {
		p := s.Probs[i*s.K]
		probs[2*i], probs[2*i+1] = 1-p, p
		if s.Labels[i] == 0 {
			labels[i] = 1
		}
	}
	return probs, labels, 2, true
}

// TestReference checks each convention against its library run on the
// same data. Tolerances: 1e-12 relative for the float64 libraries
// (summation order), 2e-6 for torchmetrics' multiclass path (float32).
func TestReference(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want, rel float64) {
		t.Helper()
		if d := math.Abs(got - want); d > rel*math.Abs(want) && d > 1e-15 {
			t.Errorf("%s: %.17g, library %.17g (rel %.2g)", what, got, want, d/math.Abs(want))
		}
	}
	for _, c := range ref.Cases {
		probs, labels, k, binary := set(t, c.Set, c.Split, c.View)
		name := fmt.Sprintf("%s %s B=%d", c.Set, c.View, c.Bins)
		curveOf := func(n convention.Name, binning metric.Binning) *convention.Curve {
			cv, _, err := convention.CurveOf(n, probs, labels, k, binary, nil, c.Bins, binning)
			if err != nil {
				t.Fatalf("%s %s: %v", name, n, err)
			}
			return cv
		}
		for _, sk := range []struct {
			c *curve
			b metric.Binning
		}{{c.SklearnUniform, metric.EqualWidth}, {c.SklearnQuantile, metric.EqualMass}} {
			if sk.c == nil {
				continue
			}
			cv := curveOf(convention.Sklearn, sk.b)
			j := 0
			for _, bin := range cv.Bins {
				if bin.Count == 0 {
					continue
				}
				if j >= len(sk.c.ProbTrue) {
					t.Fatalf("%s sklearn %v: more non-empty bins than calibration_curve's %d", name, sk.b, len(sk.c.ProbTrue))
				}
				check(fmt.Sprintf("%s sklearn %v bin %d prob_true", name, sk.b, j), bin.Freq, sk.c.ProbTrue[j], 1e-12)
				check(fmt.Sprintf("%s sklearn %v bin %d prob_pred", name, sk.b, j), bin.Score, sk.c.ProbPred[j], 1e-12)
				j++
			}
			if j != len(sk.c.ProbTrue) {
				t.Errorf("%s sklearn %v: %d non-empty bins, calibration_curve %d", name, sk.b, j, len(sk.c.ProbTrue))
			}
		}
		if c.Torchmetrics != nil {
			cv := curveOf(convention.Torchmetrics, metric.EqualWidth)
			rel := 1e-12
			if !binary {
				rel = 2e-6
			}
			check(name+" torchmetrics l1", cv.ECE(1), c.Torchmetrics["l1"], rel)
			check(name+" torchmetrics l2", math.Sqrt(cv.ECE(2)), c.Torchmetrics["l2"], rel)
			check(name+" torchmetrics max", cv.MCE(), c.Torchmetrics["max"], rel)
		}
		if c.Netcal != nil {
			cv := curveOf(convention.Netcal, metric.EqualWidth)
			check(name+" netcal ECE", cv.ECE(1), c.Netcal["ece"], 1e-12)
			check(name+" netcal MCE", cv.MCE(), c.Netcal["mce"], 1e-12)
			check(name+" netcal ACE", cv.Average(), c.Netcal["ace"], 1e-12)
		}
		if c.Relplot != nil {
			check(name+" relplot binnedECE", curveOf(convention.Relplot, metric.EqualWidth).ECE(1), *c.Relplot, 1e-12)
		}
		if c.Hendrycks != nil {
			c.Bins = 1 // calib_err has no number of bins: 100 scores each
			cv := curveOf(convention.Hendrycks, metric.EqualWidth)
			check(name+" hendrycks p=1", cv.ECE(1), c.Hendrycks["1"], 1e-12)
			check(name+" hendrycks p=2", math.Sqrt(cv.ECE(2)), c.Hendrycks["2"], 1e-12)
			check(name+" hendrycks max", cv.MCE(), c.Hendrycks["infty"], 1e-12)
		}
	}
}
