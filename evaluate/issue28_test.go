package evaluate

import (
	"context"
	"encoding/json"
	"math"
	"strings"
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

// TestSumsStateChecked: a decoded Sums is checked for consistency and
// refused with a message naming the field: n edited to -5 or 10^6, the
// weight total to 0 or 1e308, scores.correct_sum times 5 (an accuracy of
// 3.95 was reported), a configuration edited from 15 to 20 bins over
// 15-bin sums (15 were used); merging a shard's sums with a copy of
// themselves is refused (n doubled), and so is adding the same rows twice.
func TestSumsStateChecked(t *testing.T) {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, s.N)
	for i := range w {
		w[i] = 1 + float64(i%3)
	}
	ws := RowsOf(s, 0, s.N)
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	state := func(set *data.Set, o StreamOptions) map[string]any {
		t.Helper()
		sums, err := NewSums(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := sums.Add(&Batch{Set: set, Source: "part-0.csv"}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(sums)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
	}
	decode := func(m map[string]any) error {
		b, _ := json.Marshal(m)
		return json.Unmarshal(b, new(Sums))
	}
	o := StreamOptions{Options: Options{Metrics: []string{"ece_bin", "brier", "accuracy", "ks"}}}
	if err := decode(state(s, o)); err != nil {
		t.Fatalf("unedited: %v", err)
	}
	for _, c := range []struct {
		name     string
		weighted bool
		edit     func(m map[string]any)
		want     string
	}{
		{"n = -5", false, func(m map[string]any) { m["n"] = -5 }, "n = -5"},
		{"n = 10^6", false, func(m map[string]any) { m["n"] = 1e6 }, "n = 1000000"},
		{"w = 0", true, func(m map[string]any) { m["w"] = 0 }, "weight"},
		{"w = 1e308", true, func(m map[string]any) { m["w"] = 1e308 }, "weight"},
		{"correct x 5", false, func(m map[string]any) {
			sc := m["scores"].(map[string]any)
			sc["correct_sum"] = sc["correct_sum"].(float64) * 5
		}, "scores.correct_sum"},
		{"20 bins over 15", false, func(m map[string]any) {
			cfg := m["config"].(map[string]any)
			cfg["bins"].(map[string]any)["Bins"] = 20
		}, "for 20 bins"},
	} {
		m := state(s, o)
		if c.weighted {
			m = state(ws, o)
		}
		c.edit(m)
		if err := decode(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	a, _ := NewSums(o)
	if err := a.Add(&Batch{Set: s, Source: "part-0.csv"}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a)
	var copyOf Sums
	if err := json.Unmarshal(b, &copyOf); err != nil {
		t.Fatal(err)
	}
	if err := a.Merge(&copyOf); err == nil || !strings.Contains(err.Error(), "the same rows twice") || a.N != 200 {
		t.Errorf("merged with itself: %v, n = %d", err, a.N)
	}
	if err := a.Add(&Batch{Set: RowsOf(s, 50, 60), Source: "part-0.csv", Offset: 50}); err == nil || !strings.Contains(err.Error(), "rows 51 to 60") {
		t.Errorf("rows added twice: %v", err)
	}
	// Other rows of the same source, and another source, merge.
	c, _ := NewSums(o)
	c.Add(&Batch{Set: RowsOf(s, 0, 100), Source: "part-1.csv"})
	d, _ := NewSums(o)
	d.Add(&Batch{Set: RowsOf(s, 100, 200), Source: "part-1.csv", Offset: 100})
	if err := c.Merge(d); err != nil || c.N != 200 || len(c.Rows) != 1 || c.Rows[0].To != 200 {
		t.Errorf("two halves of one source: %v, n = %d, rows %+v", err, c.N, c.Rows)
	}
	if err := a.Merge(c); err != nil || a.N != 400 {
		t.Errorf("another source: %v, n = %d", err, a.N)
	}
}
