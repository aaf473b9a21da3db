package metric

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// shards cuts n rows into random contiguous shards (some empty).
func shards(rng *rand.Rand, n int) [][2]int {
	var out [][2]int
	for i := 0; i < n; {
		j := min(n, i+rng.IntN(n/5+2))
		out = append(out, [2]int{i, j})
		if rng.IntN(7) == 0 {
			out = append(out, [2]int{j, j})
		}
		i = j
	}
	rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	return out
}

// TestBinSumsMatchInMemory: binned sums accumulated shard by shard (in a
// shuffled order, each shard its own BinSums, merged) give the in-memory
// ECE, MCE and debiased L2 of the top-label and class-wise bins on a real
// set, with and without weights, to 1e-12.
func TestBinSumsMatchInMemory(t *testing.T) {
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		probs, labels, k := set.Probs, set.Labels, set.K
		n := len(labels)
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		w := make([]float64, n)
		for i := range w {
			w[i] = rng.ExpFloat64()
			if i%13 == 0 {
				w[i] = 0
			}
		}
		for _, weights := range [][]float64{nil, w} {
			for _, o := range []BinOptions{{}, {Bins: 10, OpenLow: true}} {
				views := map[string][2][]float64{}
				s, c := TopR(probs, labels, k, 1)
				views["top"] = [2][]float64{s, c}
				s, c = ClassColumn(probs, labels, k, k-1)
				views["class"] = [2][]float64{s, c}
				for view, sc := range views {
					want, err := BinScores(sc[0], sc[1], weights, o)
					if err != nil {
						t.Fatal(err)
					}
					total, _ := NewBinSums(o)
					for _, sh := range shards(rng, n) {
						part, err := NewBinSums(o)
						if err != nil {
							t.Fatal(err)
						}
						var ws []float64
						if weights != nil {
							ws = weights[sh[0]:sh[1]]
						}
						if err := part.Add(sc[0][sh[0]:sh[1]], sc[1][sh[0]:sh[1]], ws); err != nil {
							t.Fatal(err)
						}
						if err := total.Merge(part); err != nil {
							t.Fatal(err)
						}
					}
					got := total.Bins()
					label := name + "/" + view
					if got.N != want.N {
						t.Fatalf("%s: N = %d, want %d", label, got.N, want.N)
					}
					for _, p := range []float64{1, 2} {
						near(t, label+" ECE", got.ECE(p), want.ECE(p), 1e-12)
					}
					near(t, label+" MCE", got.MCE(), want.MCE(), 1e-12)
					near(t, label+" DebiasedL2", got.DebiasedL2(), want.DebiasedL2(), 1e-12)
				}
			}
		}
	}
}

// TestScoreSumsMatchInMemory: accuracy, confidence, Brier and NLL (from
// probabilities and from logits) merged over shuffled shards equal the
// in-memory functions to 1e-12, with and without weights.
func TestScoreSumsMatchInMemory(t *testing.T) {
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		probs, labels, k := set.Probs, set.Labels, set.K
		n := len(labels)
		logits := make([]float64, len(probs))
		for i, v := range probs {
			logits[i] = math.Log(math.Max(v, 1e-300)) + 0.5 // any logits whose softmax is probs
		}
		rng := rand.New(rand.NewPCG(uint64(n), 8))
		w := make([]float64, n)
		for i := range w {
			w[i] = float64(rng.IntN(4))
		}
		for _, weights := range [][]float64{nil, w} {
			for _, lg := range [][]float64{nil, logits} {
				total := NewScoreSums()
				for _, sh := range shards(rng, n) {
					part := NewScoreSums()
					var ws, ls []float64
					if weights != nil {
						ws = weights[sh[0]:sh[1]]
					}
					if lg != nil {
						ls = lg[sh[0]*k : sh[1]*k]
					}
					if err := part.Add(probs[sh[0]*k:sh[1]*k], ls, labels[sh[0]:sh[1]], k, ws); err != nil {
						t.Fatal(err)
					}
					total.Merge(part)
				}
				near(t, name+" accuracy", total.Accuracy(), Accuracy(probs, labels, k, weights), 1e-12)
				near(t, name+" confidence", total.Confidence(), Confidence(probs, labels, k, weights), 1e-12)
				near(t, name+" brier", total.BrierScore(), Brier(probs, labels, k, weights), 1e-12)
				near(t, name+" nll", total.MeanNLL(), NLL(probs, lg, labels, k, weights), 1e-12)
				if total.st.N != n {
					t.Errorf("%s: N = %d, want %d", name, total.st.N, n)
				}
			}
		}
	}
}

// TestSumsMergeAndMarshal: merging is associative (to rounding: 1e-15),
// the JSON form round-trips bit for bit, and bad input is refused.
func TestSumsMergeAndMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	part := func() *BinSums {
		bs, _ := NewBinSums(BinOptions{})
		s, o := make([]float64, 100), make([]float64, 100)
		for i := range s {
			s[i] = rng.Float64()
			o[i] = float64(rng.IntN(2))
		}
		if err := bs.Add(s, o, nil); err != nil {
			t.Fatal(err)
		}
		return bs
	}
	a, b, c := part(), part(), part()
	clone := func(x *BinSums) *BinSums {
		data, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		var y BinSums
		if err := json.Unmarshal(data, &y); err != nil {
			t.Fatal(err)
		}
		return &y
	}
	left, right := clone(a), clone(b)
	_ = left.Merge(b)
	_ = left.Merge(c) // (a + b) + c
	_ = right.Merge(c)
	ra := clone(a)
	_ = ra.Merge(right) // a + (b + c)
	near(t, "associativity", left.Bins().ECE(1), ra.Bins().ECE(1), 1e-15)
	rt := clone(left)
	for i := range rt.st.Score {
		if math.Float64bits(rt.st.Score[i]) != math.Float64bits(left.st.Score[i]) || rt.st.Count[i] != left.st.Count[i] {
			t.Fatalf("JSON round trip changed bin %d", i)
		}
	}
	if _, err := NewBinSums(BinOptions{Binning: EqualMass}); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("equal-mass bins: %v, want ErrNotMergeable", err)
	}
	if _, err := NewBinSums(BinOptions{Rule: Sqrt}); !errors.Is(err, ErrNotMergeable) {
		t.Errorf("the Sqrt rule: %v, want ErrNotMergeable", err)
	}
	ten, _ := NewBinSums(BinOptions{Bins: 10})
	if err := ten.Merge(a); err == nil {
		t.Error("merging 10 bins with 15: no error")
	}
	if err := a.Add([]float64{0.5}, []float64{1}, []float64{-1}); !errors.Is(err, mathx.ErrWeights) {
		t.Errorf("a negative weight: %v, want ErrWeights", err)
	}
	var bad BinSums
	if err := json.Unmarshal([]byte(`{"version":2,"edges":[0,1],"count":[0],"mass":[0],"score_sum":[0],"outcome_sum":[0]}`), &bad); err == nil {
		t.Error("version 2: no error")
	}
	if err := json.Unmarshal([]byte(`{"version":1,"edges":[0,0.5,1],"count":[0],"mass":[0],"score_sum":[0],"outcome_sum":[0]}`), &bad); err == nil {
		t.Error("3 edges for 1 bin: no error")
	}
	var ss ScoreSums
	if err := json.Unmarshal([]byte(`{"version":0}`), &ss); err == nil {
		t.Error("ScoreSums version 0: no error")
	}
	ks, _ := NewKSSums(64)
	_ = ks.Add([]float64{0.1, 0.7, 0.7, 1}, []float64{0, 1, 0, 1}, []float64{1, 2, 0.5, 1})
	data, _ := json.Marshal(ks)
	var ks2 KSSums
	if err := json.Unmarshal(data, &ks2); err != nil {
		t.Fatal(err)
	}
	lo, hi := ks.Interval()
	lo2, hi2 := ks2.Interval()
	if lo != lo2 || hi != hi2 || ks2.st.N != 4 {
		t.Errorf("KSSums JSON round trip: [%v, %v] became [%v, %v]", lo, hi, lo2, hi2)
	}
	if err := json.Unmarshal([]byte(`{"version":1,"cells":3,"score_sum":[0],"outcome_sum":[0],"abs_sum":[0]}`), &ks2); err == nil {
		t.Error("KSSums with 3 cells and 1 sum: no error")
	}
	if _, err := NewKSSums(-1); err == nil {
		t.Error("NewKSSums(-1): no error")
	}
	if err := ks.Merge(&KSSums{st: ksSumsState{Cells: 8}}); err == nil {
		t.Error("merging 64 cells with 8: no error")
	}
}

// TestKSSumsBracketExact: on real sets (top-1, top-2, within-top-2 and a
// class column), merged over shuffled shards, with and without weights,
// the interval holds the exact KS (up to 1e-12 of rounding), and on 4,096
// cells it is narrow (below 5e-4 here; 1.2e-4 at most measured).
func TestKSSumsBracketExact(t *testing.T) {
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		probs, labels, k := set.Probs, set.Labels, set.K
		n := len(labels)
		rng := rand.New(rand.NewPCG(uint64(n), 10))
		w := make([]float64, n)
		for i := range w {
			w[i] = rng.ExpFloat64()
		}
		views := map[string][2][]float64{}
		s, o := TopR(probs, labels, k, 1)
		views["top1"] = [2][]float64{s, o}
		s, o = TopR(probs, labels, k, 2)
		views["top2"] = [2][]float64{s, o}
		s, o = WithinTopR(probs, labels, k, 2)
		views["within2"] = [2][]float64{s, o}
		s, o = ClassColumn(probs, labels, k, 0)
		views["class0"] = [2][]float64{s, o}
		for view, so := range views {
			for _, weights := range [][]float64{nil, w} {
				exact, _ := KS(so[0], so[1], false, weights)
				total, err := NewKSSums(0)
				if err != nil {
					t.Fatal(err)
				}
				for _, sh := range shards(rng, n) {
					part, _ := NewKSSums(0)
					var ws []float64
					if weights != nil {
						ws = weights[sh[0]:sh[1]]
					}
					if err := part.Add(so[0][sh[0]:sh[1]], so[1][sh[0]:sh[1]], ws); err != nil {
						t.Fatal(err)
					}
					if err := total.Merge(part); err != nil {
						t.Fatal(err)
					}
				}
				lo, hi := total.Interval()
				if !(lo-1e-12 <= exact && exact <= hi+1e-12) || hi-lo > 5e-4 {
					t.Errorf("%s %s (weighted %v): KS %.6g outside [%.6g, %.6g] or too wide", name, view, weights != nil, exact, lo, hi)
				}
				t.Logf("%s %s weighted=%v: KS %.6f in [%.6f, %.6f]", name, view, weights != nil, exact, lo, hi)
			}
		}
	}
}

// TestCellSumsMatchInMemory: canonical cell sums merged over shuffled
// shards give Canonical's value (p = 1, 2), MCE and occupied cells on the
// real sets, with and without weights (1e-12), and survive a JSON round
// trip bit for bit.
func TestCellSumsMatchInMemory(t *testing.T) {
	for name, dir := range testLogits {
		set := loadTestSet(t, dir)
		probs, labels, k := set.Probs, set.Labels, set.K
		n := len(labels)
		rng := rand.New(rand.NewPCG(uint64(n), 12))
		w := make([]float64, n)
		for i := range w {
			w[i] = rng.ExpFloat64()
		}
		for _, weights := range [][]float64{nil, w} {
			for _, b := range []int{0, 4} {
				total, err := NewCellSums(k, b)
				if err != nil {
					t.Fatal(err)
				}
				for _, sh := range shards(rng, n) {
					part, _ := NewCellSums(k, b)
					var ws []float64
					if weights != nil {
						ws = weights[sh[0]:sh[1]]
					}
					if err := part.Add(probs[sh[0]*k:sh[1]*k], labels[sh[0]:sh[1]], ws); err != nil {
						t.Fatal(err)
					}
					if err := total.Merge(part); err != nil {
						t.Fatal(err)
					}
				}
				data, err := json.Marshal(total)
				if err != nil {
					t.Fatal(err)
				}
				var back CellSums
				if err := json.Unmarshal(data, &back); err != nil {
					t.Fatal(err)
				}
				for _, p := range []float64{1, 2} {
					want, err := Canonical(probs, labels, k, p, weights, BinOptions{Bins: b})
					if err != nil {
						t.Fatal(err)
					}
					got, rt := total.Estimate(p), back.Estimate(p)
					label := name
					near(t, label+" canonical value", got.Value, want.Value, 1e-12)
					near(t, label+" canonical MCE", got.MCE, want.MCE, 1e-12)
					if got.Cells != want.Cells || got.B != want.B {
						t.Errorf("%s: %d cells of B = %d, want %d of %d", label, got.Cells, got.B, want.Cells, want.B)
					}
					if math.Float64bits(rt.Value) != math.Float64bits(got.Value) {
						t.Errorf("%s: the JSON round trip changed the value", label)
					}
				}
			}
		}
	}
	cs, _ := NewCellSums(3, 5)
	if err := cs.Add([]float64{0.2, 0.3, 0.5}, []int{3}, nil); err == nil {
		t.Error("label 3 of K = 3: no error")
	}
	other, _ := NewCellSums(3, 6)
	if err := cs.Merge(other); err == nil {
		t.Error("merging B = 5 with B = 6: no error")
	}
	var bad CellSums
	if err := json.Unmarshal([]byte(`{"version":1,"k":2,"bins":5,"cells":{"0,4":{"count":1,"mass":1,"prediction_sum":[0.1],"label_sum":[0,1]}}}`), &bad); err == nil {
		t.Error("a cell with 1 prediction sum for K = 2: no error")
	}
	if _, err := NewCellSums(0, 5); err == nil {
		t.Error("K = 0: no error")
	}
}
