package variational

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/synth"
)

// streamed runs both passes over s cut into batches of size rows (one
// shard), the sketch keeping capacity rows per fold, and returns the
// estimates of the three streamed losses.
func streamed(t *testing.T, s *data.Set, size, capacity int) (*Sketch, []Result) {
	t.Helper()
	sk, err := NewSketch(Options{}, s.K, capacity)
	if err != nil {
		t.Fatal(err)
	}
	batches := func(visit func(b *data.Set, off int64)) {
		for lo := 0; lo < s.N; lo += size {
			idx := make([]int, 0, size)
			for i := lo; i < min(lo+size, s.N); i++ {
				idx = append(idx, i)
			}
			visit(rows(s, idx), int64(lo))
		}
	}
	batches(func(b *data.Set, off int64) {
		if err := sk.Add(b, 0, off); err != nil {
			t.Fatal(err)
		}
	})
	fitted, err := sk.Fit(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The second pass's workers read the maps from JSON.
	var ft Fitted
	roundTrip(t, fitted, &ft)
	gs := ft.NewSums()
	batches(func(b *data.Set, off int64) {
		if err := ft.Add(gs, b, 0, off); err != nil {
			t.Fatal(err)
		}
	})
	var merged GainSums
	roundTrip(t, gs, &merged)
	var out []Result
	for _, lo := range streamLosses {
		r, err := ft.Error(&merged, lo)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return sk, out
}

// roundTrip writes v as JSON and reads it into out.
func roundTrip(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// TestStreamEqualsInMemory: when every fold's sample holds all its rows,
// the streamed estimate is the in-memory one (the sums' order aside):
// value, SE, interval, per-fold means and the family chosen, for each
// loss, with and without weights and logits.
func TestStreamEqualsInMemory(t *testing.T) {
	fam := synth.Family{K: 10, Alpha: 1, Miscalibration: synth.PriorShift, Param: 0.5, Seed: 1}
	f, y, _ := fam.Draw(3000, rand.New(rand.NewPCG(11, 12)))
	plain, err := data.New(f, fam.K, y, false, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	weighted, _ := data.New(f, fam.K, y, false, data.Options{})
	w := make([]float64, weighted.N)
	for i := range w {
		w[i] = 0.5 + float64(i%7)/4
	}
	if err := weighted.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	logits, _ := data.New(f, fam.K, y, false, data.Options{})
	logits.Logits = make([]float64, len(f))
	for i, p := range f {
		logits.Logits[i] = math.Log(p) + 3 // the softmax of log f, shifted
	}
	for name, s := range map[string]*data.Set{"plain": plain, "weighted": weighted, "logits": logits} {
		rc, err := CrossFit(context.Background(), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sk, got := streamed(t, s, 700, s.N)
		if !sk.Complete() {
			t.Fatalf("%s: the sketch dropped rows", name)
		}
		for l, lo := range streamLosses {
			want, err := rc.Error(lo)
			if err != nil {
				t.Fatal(err)
			}
			g := got[l]
			close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }
			if g.Family != want.Family || !close(g.Value, want.Value) || !close(g.SE, want.SE) || !close(g.Lo, want.Lo) || !close(g.Hi, want.Hi) ||
				!close(g.MapSE, want.MapSE) || !close(g.Optimism, want.Optimism) || g.N != want.N {
				t.Errorf("%s, %s: streamed %s %v (SE %v, [%v, %v]), in memory %s %v (SE %v, [%v, %v])", name, lo.Loss,
					g.Family, g.Value, g.SE, g.Lo, g.Hi, want.Family, want.Value, want.SE, want.Lo, want.Hi)
			}
			for fo := range want.PerFold {
				if !close(g.PerFold[fo], want.PerFold[fo]) {
					t.Errorf("%s, %s: fold %d: %v, in memory %v", name, lo.Loss, fo, g.PerFold[fo], want.PerFold[fo])
				}
			}
		}
	}
}

// TestStreamSampled: a sketch of 300 rows per fold (1,500 of 20,000)
// bounds its samples, gives the same result however the stream is cut and
// merged, and its CE_1 estimate is within its interval's reach of the
// in-memory one.
func TestStreamSampled(t *testing.T) {
	fam := synth.Family{K: 10, Alpha: 1, Miscalibration: synth.Tempering, Param: 0.7}
	s := drawSet(t, fam, 20000, 13, 14)
	sk, got := streamed(t, s, 1000, 300)
	if sk.Complete() {
		t.Fatal("the sketch holds every row")
	}
	var seen int64
	for fo := range sk.Folds {
		if len(sk.Samples[fo]) > 300 {
			t.Errorf("fold %d keeps %d rows", fo, len(sk.Samples[fo]))
		}
		seen += sk.Seen[fo]
	}
	if seen != 20000 || got[0].N != 20000 {
		t.Errorf("rows seen %d, summed %d", seen, got[0].N)
	}
	// Cut otherwise, two sketches merged: the same sample, the same
	// estimate.
	sk2, err := NewSketch(Options{}, s.K, 300)
	if err != nil {
		t.Fatal(err)
	}
	half, err := NewSketch(Options{}, s.K, 300)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(lo, hi int) []int {
		var out []int
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	if err := half.Add(rows(s, idx(12345, 20000)), 0, 12345); err != nil {
		t.Fatal(err)
	}
	if err := sk2.Add(rows(s, idx(0, 12345)), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := sk2.Merge(half); err != nil {
		t.Fatal(err)
	}
	for fo := range sk.Folds {
		a, b := sk.Samples[fo], sk2.Samples[fo]
		sk.compact(fo)
		sk2.compact(fo)
		if len(a) != len(b) {
			t.Fatalf("fold %d: %d and %d rows", fo, len(a), len(b))
		}
		for i := range a {
			if a[i].Row != b[i].Row {
				t.Fatalf("fold %d: the samples differ at %d", fo, i)
			}
		}
	}
	rc, err := CrossFit(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := rc.Error(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(got[0].Value - want.Value); d > 0.03 {
		t.Errorf("CE_1: sampled maps %v, in memory %v", got[0].Value, want.Value)
	}
	if got[0].Hi <= got[0].Lo || got[0].SE <= 0 {
		t.Errorf("interval [%v, %v], SE %v", got[0].Lo, got[0].Hi, got[0].SE)
	}
}

// TestSecondPassOtherRows: a second pass that gives the rows at other
// places (a shuffled loader), or other rows, is refused, not summed under
// maps that may have been fitted on them.
func TestSecondPassOtherRows(t *testing.T) {
	fam := synth.Family{K: 4, Alpha: 1, Miscalibration: synth.Tempering, Param: 0.7}
	s := drawSet(t, fam, 600, 3, 4)
	sk, err := NewSketch(Options{}, s.K, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sk.Add(s, 0, 0); err != nil {
		t.Fatal(err)
	}
	ft, err := sk.Fit(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, s.N)
	for i := range all {
		all[i] = i
	}
	swapped := append([]int{1, 0}, all[2:]...)
	for _, c := range []struct {
		name string
		idx  []int
		ok   bool
	}{{"the same rows", all, true}, {"two rows swapped", swapped, false}, {"a row left out", all[1:], false}} {
		gs := ft.NewSums()
		if err := ft.Add(gs, rows(s, c.idx), 0, 0); err != nil {
			t.Fatal(err)
		}
		_, err := ft.Error(gs, Options{})
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInput)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
