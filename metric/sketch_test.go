package metric

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sketchBins runs both passes over the shards of the scores (each shard's
// sketch and values through JSON, merged in the shards' shuffled order)
// and returns the bins, their bound and the needed buckets.
func sketchBins(t *testing.T, rng *rand.Rand, sc, oc, w []float64, o BinOptions, limit int) (*Bins, SketchBound, []uint32) {
	t.Helper()
	n := len(sc)
	part := func(sh [2]int) ([]float64, []float64, []float64) {
		var ws []float64
		if w != nil {
			ws = w[sh[0]:sh[1]]
		}
		return sc[sh[0]:sh[1]], oc[sh[0]:sh[1]], ws
	}
	sk := NewScoreSketch()
	for _, sh := range shards(rng, n) {
		p := NewScoreSketch()
		if err := p.Add(part(sh)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back := new(ScoreSketch)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		sk.Merge(back)
	}
	keys, err := sk.Needed(o, w != nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEdgeValues(keys, limit)
	for _, sh := range shards(rng, n) {
		p := NewEdgeValues(keys, limit)
		if err := p.Add(part(sh)); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back := new(EdgeValues)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if err := ev.Merge(back); err != nil {
			t.Fatal(err)
		}
	}
	got, bound, err := sk.Bins(o, w != nil, ev)
	if err != nil {
		t.Fatal(err)
	}
	return got, bound, keys
}

// TestScoreSketchBinsExact: the two passes over shuffled shards (through
// JSON) give BinScores's bins for the data-dependent rules (equal-mass with
// 15 bins, Doane and Sqrt; equal-width with Doane and Sqrt; OpenLow) on
// the top-label and a class column of the real sets, the same scores
// rounded to 2 decimals (ties at the edges), without weights, with real
// weights (some 0) and with integer weights: the edges bit for bit (to
// 1e-10 with real weights, whose total is summed in another order), the
// counts exactly, ECE_1, ECE_2, MCE and the debiased L2 to 1e-12; the
// bound is 0. The needed buckets are a small part of the sketch.
func TestScoreSketchBinsExact(t *testing.T) {
	rules := []BinOptions{
		{Binning: EqualMass}, {Binning: EqualMass, Rule: Doane}, {Binning: EqualMass, Rule: Sqrt},
		{Rule: Doane}, {Rule: Sqrt}, {Binning: EqualMass, Bins: 10, OpenLow: true},
	}
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		probs, labels, k := set.Probs, set.Labels, set.K
		n := len(labels)
		rng := rand.New(rand.NewPCG(uint64(n), 11))
		real, integer := make([]float64, n), make([]float64, n)
		for i := range real {
			real[i] = rng.ExpFloat64()
			integer[i] = float64(rng.IntN(4))
			if i%17 == 0 {
				real[i] = 0
			}
		}
		views := map[string][2][]float64{}
		s, c := TopR(probs, labels, k, 1)
		views["top"] = [2][]float64{s, c}
		r := make([]float64, n)
		for i, v := range s {
			r[i] = math.Round(v*100) / 100
		}
		views["top-rounded"] = [2][]float64{r, c}
		s, c = ClassColumn(probs, labels, k, 1)
		views["class"] = [2][]float64{s, c}
		for view, sc := range views {
			for wi, w := range [][]float64{nil, real, integer} {
				for _, o := range rules {
					label := name + "/" + view + "/" + o.Binning.String() + "/" + o.Rule.String()
					want, err := BinScores(sc[0], sc[1], w, o)
					if err != nil {
						t.Fatal(err)
					}
					got, bound, keys := sketchBins(t, rng, sc[0], sc[1], w, o, 0)
					// Real weights: the positions (b/B)(W - 1) come from W
					// summed in another order, so the edges agree to the
					// rounding of W (about 1e-12 here) times the gap between
					// the two order statistics.
					tol := 0.0
					if wi == 1 {
						tol = 1e-10
					}
					if len(got.Edges) != len(want.Edges) || slices.ContainsFunc(got.Edges, func(e float64) bool {
						i := slices.Index(got.Edges, e)
						return math.Abs(e-want.Edges[i]) > tol
					}) {
						t.Errorf("%s w%d: edges %v, BinScores %v", label, wi, got.Edges, want.Edges)
						continue
					}
					if !slices.Equal(got.Count, want.Count) || got.N != want.N {
						t.Errorf("%s w%d: counts %v (N %d), BinScores %v (N %d)", label, wi, got.Count, got.N, want.Count, want.N)
					}
					for _, p := range []float64{1, 2} {
						near(t, label+" ECE", got.ECE(p), want.ECE(p), 1e-12)
					}
					near(t, label+" MCE", got.MCE(), want.MCE(), 1e-12)
					near(t, label+" DebiasedL2", got.DebiasedL2(), want.DebiasedL2(), 1e-12)
					if bound != (SketchBound{}) {
						t.Errorf("%s: bound %+v with every needed score", label, bound)
					}
					if len(keys) > 2*len(got.Edges) {
						t.Errorf("%s: %d needed buckets for %d edges", label, len(keys), len(got.Edges))
					}
				}
			}
		}
	}
}

// TestScoreSketchBound: when the second pass may hold too few scores it
// overflows, the edges come from bucket ends, and the binned ECE_1 is
// within 2 Abs of the exact one (Abs > 0, Mass >= Abs); merging an
// overflowed shard overflows.
func TestScoreSketchBound(t *testing.T) {
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		n := len(set.Labels)
		s, c := TopR(set.Probs, set.Labels, set.K, 1)
		rng := rand.New(rand.NewPCG(uint64(n), 12))
		for _, o := range []BinOptions{{Binning: EqualMass}, {Binning: EqualMass, Bins: 40}, {Rule: Sqrt}} {
			want, err := BinScores(s, c, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			got, bound, _ := sketchBins(t, rng, s, c, nil, o, 3)
			if !(bound.Abs > 0 && bound.Mass >= bound.Abs && bound.Mass < 1) {
				t.Errorf("%s %v: bound %+v after an overflow", name, o, bound)
			}
			if d := math.Abs(got.ECE(1) - want.ECE(1)); d > 2*bound.Abs+1e-12 {
				t.Errorf("%s %v: ECE_1 %v, exact %v: off by %v > 2 Abs = %v", name, o, got.ECE(1), want.ECE(1), d, 2*bound.Abs)
			}
			if got.N != want.N || sum(got.Count) != sum(want.Count) {
				t.Errorf("%s: %d rows in bins, exact %d", name, sum(got.Count), sum(want.Count))
			}
		}
	}
	a, b := NewEdgeValues([]uint32{SketchKey(0.9)}, 1), NewEdgeValues([]uint32{SketchKey(0.9)}, 1)
	a.Add([]float64{0.9}, []float64{1}, nil)
	b.Add([]float64{0.9, math.Nextafter(0.9, 1)}, []float64{1, 0}, nil)
	if !b.overflowed || a.overflowed {
		t.Fatalf("overflow: %v %v", a.overflowed, b.overflowed)
	}
	a.Merge(b)
	if !a.overflowed {
		t.Error("merging an overflowed shard did not overflow")
	}
	if err := a.Merge(NewEdgeValues(nil, 1)); err == nil {
		t.Error("merging values of other buckets: no error")
	}
}

func sum(x []int) int {
	s := 0
	for _, v := range x {
		s += v
	}
	return s
}

// SketchKey is non-decreasing on [0, 1] and its buckets are narrow at
// both ends.
func TestSketchKey(t *testing.T) {
	prev := SketchKey(0)
	for _, s := range []float64{1e-300, 1e-10, 0.001, 0.25, math.Nextafter(0.5, 0), 0.5, 0.75, 0.999, 0.9999, 1 - 1e-12, 1} {
		k := SketchKey(s)
		if k < prev {
			t.Errorf("key(%v) = %d < %d", s, k, prev)
		}
		prev = k
	}
	if SketchKey(0.999) == SketchKey(0.9999) || SketchKey(0.001) == SketchKey(0.0011) {
		t.Error("buckets too wide at the ends")
	}
	if SketchKey(0.5) != sketchHalf || SketchKey(1) != 2*sketchHalf {
		t.Errorf("key(0.5) = %d, key(1) = %d", SketchKey(0.5), SketchKey(1))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		a, b := rng.Float64(), rng.Float64()
		if a > b {
			a, b = b, a
		}
		if SketchKey(a) > SketchKey(b) {
			t.Fatalf("key(%v) > key(%v)", a, b)
		}
	}
}

// Corrupt JSON is refused.
func TestScoreSketchJSONRefused(t *testing.T) {
	for _, bad := range []string{`{"version":2}`, `{"version":1,"keys":[1],"bucket_n":[]}`,
		`{"version":1,"keys":[5],"bucket_n":[1],"bucket_w":[1],"bucket_score_sum":[1],"bucket_outcome_sum":[1],"bucket_abs_sum":[0],"bucket_min":[0.9],"bucket_max":[0.9]}`} {
		if err := json.Unmarshal([]byte(bad), new(ScoreSketch)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for _, bad := range []string{`{"version":1,"limit":0}`, `{"version":1,"limit":5,"keys":[1],"values":[{"score":0.9}]}`} {
		if err := json.Unmarshal([]byte(bad), new(EdgeValues)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Small random sets with weights below 1 (so one unit of mass spans
// several buckets) and zero weights: the two passes give BinScores's bins
// (the edges to 1e-12, the counts exactly, ECE_1 and MCE to 1e-12) and,
// with room for one score only (overflow), ECE_1 within 2 Abs.
func TestScoreSketchFractionalWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for c := range 300 {
		n := 5 + rng.IntN(60)
		sc, oc, w := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range sc {
			sc[i] = rng.Float64()
			if rng.IntN(4) == 0 {
				sc[i] = 0.5 + 0.01*rng.Float64() // crowd some buckets
			}
			oc[i] = float64(rng.IntN(2))
			w[i] = 0.02 + 0.05*rng.Float64()
			if rng.IntN(6) == 0 {
				w[i] = 0
			}
		}
		w[0] = 1 // some weight
		for _, o := range []BinOptions{{Binning: EqualMass, Bins: 4}, {Binning: EqualMass, Bins: 3, OpenLow: true}} {
			want, err := BinScores(sc, oc, w, o)
			if err != nil {
				t.Fatal(err)
			}
			got, bound, _ := sketchBins(t, rng, sc, oc, w, o, 0)
			for i := range got.Edges {
				if math.Abs(got.Edges[i]-want.Edges[i]) > 1e-12 {
					t.Fatalf("case %d %v: edges %v, BinScores %v", c, o, got.Edges, want.Edges)
				}
			}
			if !slices.Equal(got.Count, want.Count) || bound != (SketchBound{}) {
				t.Errorf("case %d %v: counts %v (bound %+v), BinScores %v", c, o, got.Count, bound, want.Count)
			}
			near(t, "ECE", got.ECE(1), want.ECE(1), 1e-12)
			near(t, "MCE", got.MCE(), want.MCE(), 1e-12)
			approx, bound, _ := sketchBins(t, rng, sc, oc, w, o, 1)
			if d := math.Abs(approx.ECE(1) - want.ECE(1)); d > 2*bound.Abs+1e-12 {
				t.Errorf("case %d %v: overflowed ECE_1 off by %v > 2 Abs = %v", c, o, d, 2*bound.Abs)
			}
		}
	}
}

// Values that disagree with the sketch (a needed bucket held empty, as
// from crafted JSON or a second pass over other rows) are an error, not
// a panic; corrupt sketches are refused; merging empty score sums keeps
// them usable.
func TestScoreSketchDisagreement(t *testing.T) {
	sc := []float64{0.1, 0.2, 0.2001, 0.2002, 0.9}
	oc := []float64{0, 1, 0, 1, 1}
	sk := NewScoreSketch()
	sk.Add(sc, oc, nil)
	o := BinOptions{Binning: EqualMass, Bins: 2}
	keys, err := sk.Needed(o, false)
	if err != nil || len(keys) == 0 {
		t.Fatalf("needed %v, %v", keys, err)
	}
	var ev EdgeValues
	js := []byte(`{"version":1,"keys":[` + strconv.Itoa(int(keys[0])) + `],"limit":5,"values":[]}`)
	if err := json.Unmarshal(js, &ev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sk.Bins(o, false, &ev); err == nil || !strings.Contains(err.Error(), "different rows") {
		t.Errorf("empty needed bucket: %v", err)
	}
	other := NewEdgeValues(keys, 0)
	other.Add([]float64{0.2}, []float64{1}, nil)
	if _, _, err := sk.Bins(o, false, other); err == nil {
		t.Error("values of other rows: no error")
	}
	for _, bad := range []string{
		`{"version":1,"n":7,"w":1,"keys":[` + strconv.Itoa(int(SketchKey(0.9))) + `],"bucket_n":[1],"bucket_w":[1],"bucket_score_sum":[0.9],"bucket_outcome_sum":[1],"bucket_abs_sum":[0.1],"bucket_min":[0.9],"bucket_max":[0.9]}`,
		`{"version":1,"n":1,"w":-1,"keys":[` + strconv.Itoa(int(SketchKey(0.9))) + `],"bucket_n":[1],"bucket_w":[1],"bucket_score_sum":[0.9],"bucket_outcome_sum":[1],"bucket_abs_sum":[0.1],"bucket_min":[0.9],"bucket_max":[0.9]}`,
	} {
		if err := json.Unmarshal([]byte(bad), new(ScoreSketch)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := (BinOptions{Rule: Sqrt}).MergedBins(Moments{}, 1e30, 1e30); err == nil {
		t.Error("10^15 bins: no error")
	}
	a, b := NewScoreSums(), NewScoreSums()
	a.Merge(b)
	if err := a.Add([]float64{0.3, 0.7}, nil, []int{1}, 2, nil); err != nil {
		t.Errorf("add after merging empty sums: %v", err)
	}
}
