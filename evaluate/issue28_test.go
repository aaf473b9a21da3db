package evaluate

import (
	"context"
	"math"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestWeightsScaleFree: weights multiplied by 1e-300, 1, 1e300 (and by
// any power of two) give the same value of every metric, interval ends
// included, to 1e-12, and constant weights of 1e160 or 1e308 give the
// unweighted answer: weights are scaled internally (data.Set.WeightScale,
// mathx.ScaleWeights). Constant weights of 1e160 made mmce NaN, 1e305 the
// canonical ECE and the Brier score 0, 1e308 every metric NaN and the JSON
// weight sum +Inf (which encoding/json refuses).
func TestWeightsScaleFree(t *testing.T) {
	base, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, base.N)
	for i := range w {
		w[i] = 0.25 + float64((i*7)%5)
	}
	o := Options{CI: true, Resamples: 20, Seed: 3, Workers: 2, Debias: true}
	eval := func(w []float64, scale float64) *Evaluation {
		t.Helper()
		s := *base
		if w != nil {
			sw := make([]float64, len(w))
			for i, v := range w {
				sw[i] = v * scale
			}
			s.Weights = sw // by hand, as a library caller may: Evaluate scales them
		}
		ev, err := Evaluate(context.Background(), &s, o)
		if err != nil {
			t.Fatalf("scale %g: %v", scale, err)
		}
		return ev
	}
	same := func(what string, a, b *Evaluation) {
		t.Helper()
		if len(a.Results) != len(b.Results) {
			t.Fatalf("%s: %d and %d results", what, len(a.Results), len(b.Results))
		}
		for i, x := range a.Results {
			y := b.Results[i]
			if x.Error != "" || y.Error != "" {
				t.Errorf("%s: %s %s: errors %q, %q", what, x.Metric, x.Notion, x.Error, y.Error)
				continue
			}
			vals := [][2]float64{{float64(*x.Value), float64(*y.Value)}}
			if x.CI != nil && y.CI != nil {
				vals = append(vals, [2]float64{float64(x.CI[0]), float64(y.CI[0])}, [2]float64{float64(x.CI[1]), float64(y.CI[1])})
			}
			for _, v := range vals {
				if math.IsNaN(v[0]) || math.IsNaN(v[1]) || math.Abs(v[0]-v[1]) > 1e-12*max(1, math.Abs(v[0])) {
					t.Errorf("%s: %s %s p=%v: %v and %v", what, x.Metric, x.Notion, x.P, v[0], v[1])
				}
			}
		}
	}
	ref := eval(w, 1)
	for _, c := range []float64{1e-300, 1e300, 0x1p-1000, 0x1p+900} {
		same("weights x "+fmtG(c), ref, eval(w, c))
	}
	ones := make([]float64, base.N)
	for i := range ones {
		ones[i] = 1
	}
	unweighted := eval(nil, 1)
	for _, c := range []float64{1e160, 1e305, 1e308} {
		ev := eval(ones, c)
		same("constant weights "+fmtG(c), unweighted, ev)
		if want := float64(base.N) * c; !math.IsInf(want, 0) && math.Abs(float64(ev.WeightSum)-want) > 1e-12*want {
			t.Errorf("constant weights %g: weight sum %v, want %v", c, ev.WeightSum, want)
		}
		var b writerCounter
		if err := WriteJSON(&b, ev); err != nil {
			t.Errorf("constant weights %g: JSON: %v", c, err)
		}
	}
}

func fmtG(x float64) string { return string(Float(x).appendG()) }

func (f Float) appendG() []byte { b, _ := f.MarshalJSON(); return b }

type writerCounter int

func (w *writerCounter) Write(p []byte) (int, error) { *w += writerCounter(len(p)); return len(p), nil }
