package smooth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/smooth"
)

// relplotFile is testdata/relplot.json: relplot's own smECE (1.0.3 and
// 1.0.1) on the real sets of testdata/logits and on seeded synthetic
// sets, written by scripts/relplot_reference.py.
type relplotFile struct {
	Source string `json:"source"`
	Real   []struct {
		Set, Split, View string
		Class            int
		relplotResult
	} `json:"real"`
	Synthetic []struct {
		N       int
		Kind    string
		F, Y    []float64
		Results []relplotResult
	} `json:"synthetic"`
	Curves []struct {
		Set, Split, View string
		Sigma            float64
		Mean, Density    []float64
	} `json:"curves"`
}

type relplotResult struct {
	Convention string  `json:"convention"`
	SigmaArg   float64 `json:"sigma_arg"`
	Value      float64 `json:"value"`
	Sigma      float64 `json:"sigma"`
}

func readRelplot(t *testing.T) relplotFile {
	t.Helper()
	b, err := os.ReadFile("testdata/relplot.json")
	if err != nil {
		t.Fatal(err)
	}
	var f relplotFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// relTol is the agreement asked of relplot's values: numpy's dot products
// (BLAS) add in another order than the direct sums here, and the softmax
// of the logits is computed by scipy there and by calib here.
const relTol = 1e-12

func checkRelplot(t *testing.T, name string, f, y []float64, want relplotResult) {
	t.Helper()
	var o smooth.Options
	if err := o.Convention.UnmarshalText([]byte(want.Convention)); err != nil {
		t.Fatal(err)
	}
	o.Sigma = want.SigmaArg
	got, err := smooth.ECE(context.Background(), f, y, nil, o)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got.Sigma != want.Sigma {
		t.Errorf("%s %s sigma=%g: sigma %v, relplot %v", name, want.Convention, want.SigmaArg, got.Sigma, want.Sigma)
	}
	if d := math.Abs(got.Value - want.Value); d > relTol*math.Abs(want.Value) {
		t.Errorf("%s %s sigma=%g: smECE %.17g, relplot %.17g (rel diff %.2g)", name, want.Convention, want.SigmaArg, got.Value, want.Value, d/math.Abs(want.Value))
	}
}

// TestRelplot checks ECE against relplot 1.0.3 and 1.0.1 run on the same
// data (testdata/relplot.json): the fixed point sigma* exactly, the value
// within relTol, for both conventions, at sigma* and at given sigmas.
func TestRelplot(t *testing.T) {
	ref := readRelplot(t)
	sets := map[string]*data.Set{}
	for _, c := range ref.Real {
		key := c.Set + "/" + c.Split
		s := sets[key]
		if s == nil {
			d := "../testdata/logits/" + c.Set + "/" + c.Split
			var err error
			s, err = data.Load(d+"_logits.npy", data.Options{Labels: d + "_labels.npy", Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			sets[key] = s
		}
		var f, y []float64
		if c.View == "top_label" {
			f, y = metric.TopR(s.Probs, s.Labels, s.K, 1)
		} else {
			f, y = metric.ClassColumn(s.Probs, s.Labels, s.K, c.Class)
		}
		checkRelplot(t, fmt.Sprintf("%s %s class %d", key, c.View, c.Class), f, y, c.relplotResult)
	}
	for _, c := range ref.Synthetic {
		for _, r := range c.Results {
			checkRelplot(t, fmt.Sprintf("synthetic %s n=%d", c.Kind, c.N), c.F, c.Y, r)
		}
	}
}

// TestRelplotCurve checks the diagram's curve and density against
// relplot 1.0.3's KernelSmoother and kde at sigma* on 200 points.
func TestRelplotCurve(t *testing.T) {
	ref := readRelplot(t)
	for _, c := range ref.Curves {
		d := "../testdata/logits/" + c.Set + "/" + c.Split
		s, err := data.Load(d+"_logits.npy", data.Options{Labels: d + "_labels.npy", Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		f, y := metric.TopR(s.Probs, s.Labels, s.K, 1)
		got, err := smooth.NewCurve(context.Background(), f, y, nil, smooth.CurveOptions{Resamples: 20})
		if err != nil {
			t.Fatal(err)
		}
		if got.Sigma != c.Sigma || len(got.Mean) != len(c.Mean) {
			t.Fatalf("%s: sigma %v and %d points, relplot %v and %d", c.Set, got.Sigma, len(got.Mean), c.Sigma, len(c.Mean))
		}
		top := slices.Max(c.Density)
		for k := range c.Mean {
			// The mean is a probability: absolute agreement. Where the
			// density is low the FFT's rounding (about 1e-16 of the
			// largest density) is a larger share of the sums.
			if d := math.Abs(got.Mean[k] - c.Mean[k]); d > 1e-11 {
				t.Errorf("%s: mean at %d: %.17g, relplot %.17g", c.Set, k, got.Mean[k], c.Mean[k])
			}
			if d := math.Abs(got.Density[k] - c.Density[k]); d > relTol*top {
				t.Errorf("%s: density at %d: %.17g, relplot %.17g", c.Set, k, got.Density[k], c.Density[k])
			}
			if !(got.Lo[k] <= got.Hi[k]) {
				t.Errorf("%s: band at %d: [%v, %v]", c.Set, k, got.Lo[k], got.Hi[k])
			}
		}
	}
}
