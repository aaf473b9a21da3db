package smooth_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/smooth"
)

// TestSumsEqualECE: the summed smooth ECE of rows added in three batches,
// merged in another order and through JSON, is ECE of the rows in memory
// within 1e-12 relative (the sums add in another order): miscalibrated and
// calibrated rows (whose fixed point, below 0.0107, is searched on the
// finer grids), weighted and not, at the fixed point and at a given sigma.
func TestSumsEqualECE(t *testing.T) {
	ctx := context.Background()
	fineSeen := false
	for _, c := range []struct {
		n     int
		shift float64
		sigma float64
		w     bool
	}{{3000, 0.1, 0, false}, {3000, 0.1, 0, true}, {200000, 0, 0, false}, {3000, -0.05, 0.03, true}} {
		f, y := draw(c.n, 11, c.shift)
		var w []float64
		if c.w {
			r := rand.New(rand.NewPCG(2, 3))
			w = make([]float64, c.n)
			for i := range w {
				w[i] = r.Float64() * 3
			}
		}
		o := smooth.Options{Sigma: c.sigma}
		want, err := smooth.ECE(ctx, f, y, w, o)
		if err != nil {
			t.Fatal(err)
		}
		cuts := []int{0, c.n / 3, c.n / 2, c.n}
		total, err := smooth.NewSums(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{2, 0, 1} {
			part, _ := smooth.NewSums(o)
			lo, hi := cuts[p], cuts[p+1]
			var pw []float64
			if w != nil {
				pw = w[lo:hi]
			}
			if err := part.Add(f[lo:hi], y[lo:hi], pw); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(part)
			if err != nil {
				t.Fatal(err)
			}
			var back smooth.Sums
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if err := total.Merge(&back); err != nil {
				t.Fatal(err)
			}
		}
		got, err := total.ECE(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Value-want.Value) > 1e-12*want.Value || got.Sigma != want.Sigma || got.Evaluations != want.Evaluations {
			t.Errorf("n %d shift %v sigma %v weighted %v: summed %+v, in memory %+v", c.n, c.shift, c.sigma, c.w, got, want)
		}
		fineSeen = fineSeen || want.Sigma < 0.0107
	}
	if !fineSeen {
		t.Error("no case searched below sigma = 0.0107 (the finer grids)")
	}
}

// TestSumsRefuse: relplot 1.0.1's convention, a bad sigma, scores outside
// [0, 1], sums of other options and bad JSON are errors wrapping ErrInput
// (or the state's).
func TestSumsRefuse(t *testing.T) {
	if _, err := smooth.NewSums(smooth.Options{Convention: smooth.Relplot101}); !errors.Is(err, smooth.ErrInput) {
		t.Errorf("relplot-1.0.1: %v", err)
	}
	if _, err := smooth.NewSums(smooth.Options{Sigma: 2}); !errors.Is(err, smooth.ErrInput) {
		t.Errorf("sigma 2: %v", err)
	}
	if _, err := smooth.NewSums(smooth.Options{Eps: 1}); !errors.Is(err, smooth.ErrInput) {
		t.Errorf("eps 1: %v", err)
	}
	s, _ := smooth.NewSums(smooth.Options{})
	if err := s.Add([]float64{0.5, 1.5}, []float64{0, 1}, nil); !errors.Is(err, smooth.ErrInput) || s.N() != 0 {
		t.Errorf("score 1.5: %v, %d rows", err, s.N())
	}
	if _, err := s.ECE(context.Background()); !errors.Is(err, smooth.ErrInput) {
		t.Errorf("no rows: %v", err)
	}
	other, _ := smooth.NewSums(smooth.Options{Sigma: 0.1})
	if err := s.Merge(other); !errors.Is(err, smooth.ErrInput) {
		t.Errorf("merge: %v", err)
	}
	// A batch whose weights are all zero adds no row (a stream's shard of
	// zero weights), and is no error.
	if err := s.Add([]float64{0.5}, []float64{1}, []float64{0}); err != nil || s.N() != 0 {
		t.Errorf("zero weights: %v, %d rows", err, s.N())
	}
	for _, b := range []string{`{"kind":"smooth.Sums","version":1,"eps":0.001,"grids":[1001],"res":[[]],"ones":[[]],"n":0,"w":0}`,
		`{"kind":"smooth.Sums","version":1,"eps":2,"grids":[],"res":[],"ones":[],"n":1,"w":1}`,
		`{"kind":"smooth.Sums","version":2}`, `[]`} {
		var v smooth.Sums
		if err := json.Unmarshal([]byte(b), &v); err == nil {
			t.Errorf("%s: no error", b)
		}
	}
}

// FuzzSumsJSON: any input either fails to decode or gives sums whose ECE
// is an error or a finite value, never a panic.
func FuzzSumsJSON(f *testing.F) {
	s, _ := smooth.NewSums(smooth.Options{Sigma: 0.5})
	_ = s.Add([]float64{0.2, 0.9}, []float64{0, 1}, nil)
	b, _ := json.Marshal(s)
	f.Add(b)
	f.Add([]byte(`{"kind":"smooth.Sums","version":1,"sigma":0.5,"eps":0.001,"grids":[21],"n":1,"w":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v smooth.Sums
		if json.Unmarshal(b, &v) != nil {
			return
		}
		r, err := v.ECE(context.Background())
		if err == nil && (math.IsNaN(r.Value) || math.IsInf(r.Value, 0)) {
			t.Errorf("%s: value %v", b, r.Value)
		}
	})
}
