package kde

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// realRows returns the first n rows of the embedded CIFAR-10 ResNet-110
// test set (probabilities, labels, K = 10).
func realRows(t testing.TB, n int) ([]float64, []int, int) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	return s.Probs[:n*s.K], s.Labels[:n], s.K
}

// binaryRows turns rows into the binary notion's two columns (1 - p1, p1)
// with p1 the probability of class 0 and label [y = 0].
func binaryRows(probs []float64, labels []int, k int) ([]float64, []int) {
	x, y := make([]float64, 2*len(labels)), make([]int, len(labels))
	for j := range labels {
		x[2*j], x[2*j+1] = 1-probs[j*k], probs[j*k]
		if labels[j] == 0 {
			y[j] = 1
		}
	}
	return x, y
}

// addInBatches adds every row as a centre, in batches of size b, each
// centre marked as evaluation point self(i) (-1: none).
func addInBatches(t *testing.T, ps *PointSums, probs []float64, labels []int, k int, w []float64, b int, self func(i int) int, workers int) {
	t.Helper()
	n := len(labels)
	for i0 := 0; i0 < n; i0 += b {
		i1 := min(n, i0+b)
		s := make([]int, i1-i0)
		for i := range s {
			s[i] = self(i0 + i)
		}
		var wb []float64
		if w != nil {
			wb = w[i0:i1]
		}
		if err := ps.Add(context.Background(), probs[i0*k:i1*k], labels[i0:i1], wb, AddOptions{Self: s, Workers: workers}); err != nil {
			t.Fatal(err)
		}
	}
}

// With every row an evaluation point, the sums at one bandwidth give
// Estimate's values (every notion, weighted or not, p = 1, 2, 3) to 1e-12,
// whatever the batches; the interval has width 0.
func TestPointSumsAllPointsEqualEstimate(t *testing.T) {
	probs, labels, k := realRows(t, 600)
	rng := rand.New(rand.NewPCG(3, 4))
	w := randWeights(rng, len(labels), true)
	for _, notion := range []Notion{Canonical, TopLabel, ClassWise, Binary} {
		x, y, kk := probs, labels, k
		if notion == Binary {
			x, y = binaryRows(probs, labels, k)
			kk = 2
		}
		for _, weights := range [][]float64{nil, w} {
			h := 0.03
			want, err := Estimate(context.Background(), notion, x, y, kk, weights, Options{Bandwidth: h, P: []float64{1, 2, 3}})
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range []int{len(y), 97} {
				ps, err := NewPointSums(notion, x, y, kk, weights, []float64{0.01, h, 0.1})
				if err != nil {
					t.Fatal(err)
				}
				addInBatches(t, ps, x, y, kk, weights, batch, func(i int) int { return i }, 0)
				got, err := ps.Estimate(1, []float64{1, 2, 3}, false, 0)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got.Values {
					if d := relDiff(v.Value, want.Values[i].Value); d > 1e-12 {
						t.Errorf("%s weighted=%v batch %d p=%v: %.17g, Estimate %.17g (rel %.2g)", notion, weights != nil, batch, v.P, v.Value, want.Values[i].Value, d)
					}
					if v.SE != 0 || v.Lo != v.Value || v.Hi != v.Value {
						t.Errorf("%s: every point evaluated, yet SE %v [%v, %v]", notion, v.SE, v.Lo, v.Hi)
					}
				}
				if got.Excluded != want.Excluded {
					t.Errorf("%s: excluded %d, Estimate %d", notion, got.Excluded, want.Excluded)
				}
				if notion == ClassWise {
					for c := range got.PerClass[1] {
						if d := relDiff(got.PerClass[1][c], want.PerClass[1][c]); d > 1e-12 {
							t.Errorf("marginal class %d: %v, Estimate %v", c, got.PerClass[1][c], want.PerClass[1][c])
						}
					}
				}
			}
		}
	}
}

// The LOO selection on the grid with every point evaluated is
// SelectBandwidth's LOO objective (divided by n) at the grid points.
func TestPointSumsSelectMatchesLOO(t *testing.T) {
	probs, labels, k := realRows(t, 400)
	for _, notion := range []Notion{Canonical, TopLabel, ClassWise} {
		grid := []float64{0.003, 0.01, 0.03, 0.1, 0.3}
		cv, err := SelectBandwidth(context.Background(), notion, probs, labels, k, nil, BandwidthOptions{Grid: grid, NoRefine: true})
		if err != nil {
			t.Fatal(err)
		}
		ps, err := NewPointSums(notion, probs, labels, k, nil, grid)
		if err != nil {
			t.Fatal(err)
		}
		addInBatches(t, ps, probs, labels, k, nil, 128, func(i int) int { return i }, 1)
		sel, err := ps.Select()
		if err != nil {
			t.Fatal(err)
		}
		if sel.Index != cv.Index {
			t.Errorf("%s: grid index %d, SelectBandwidth %d", notion, sel.Index, cv.Index)
		}
		for g := range grid {
			if d := math.Abs(sel.GridLL[g]*float64(len(labels)) - cv.GridLL[g]); d > 1e-9*math.Abs(cv.GridLL[g]) {
				t.Errorf("%s h=%v: n x l = %.12g, SelectBandwidth %.12g", notion, grid[g], sel.GridLL[g]*float64(len(labels)), cv.GridLL[g])
			}
		}
	}
}

// Shards merged in any order, and any worker count, give the sums of one
// pass to rounding; merging is bit-identical for the same order; the JSON
// form round-trips exactly.
func TestPointSumsMergeAndJSON(t *testing.T) {
	probs, labels, k := realRows(t, 500)
	pts, ptl := probs[:50*k], labels[:50]
	self := func(i int) int {
		if i < 50 {
			return i
		}
		return -1
	}
	one, err := NewPointSums(Canonical, pts, ptl, k, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	addInBatches(t, one, probs, labels, k, nil, 500, self, 1)
	shards := [][2]int{{0, 130}, {130, 260}, {260, 500}}
	parts := make([]*PointSums, len(shards))
	for s, r := range shards {
		parts[s], _ = NewPointSums(Canonical, pts, ptl, k, nil, nil)
		n := r[1] - r[0]
		sl := make([]int, n)
		for i := range sl {
			sl[i] = self(r[0] + i)
		}
		if err := parts[s].Add(context.Background(), probs[r[0]*k:r[1]*k], labels[r[0]:r[1]], nil, AddOptions{Self: sl, Workers: 1 + s}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := one.Estimate(10, []float64{1, 2}, false, 0)
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}} {
		acc, _ := NewPointSums(Canonical, pts, ptl, k, nil, nil)
		for _, s := range order {
			if err := acc.Merge(parts[s]); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := acc.Estimate(10, []float64{1, 2}, false, 0)
		for i := range got.Values {
			if d := relDiff(got.Values[i].Value, want.Values[i].Value); d > 1e-12 {
				t.Errorf("order %v p=%v: %v, one pass %v", order, got.Values[i].P, got.Values[i].Value, want.Values[i].Value)
			}
		}
		if acc.st.N != 500 {
			t.Errorf("N = %d", acc.st.N)
		}
	}
	b, err := json.Marshal(one)
	if err != nil {
		t.Fatal(err)
	}
	var back PointSums
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.st.Sums, one.st.Sums) || !slices.EqualFunc(back.st.Shift, one.st.Shift, func(a, b float64) bool { return a == b }) || back.st.N != one.st.N {
		t.Error("JSON round trip changed the sums")
	}
	for _, bad := range []string{`{"version":2}`, `{"version":1,"k":10}`, `[`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	other, _ := NewPointSums(TopLabel, pts, ptl, k, nil, nil)
	if err := one.Merge(other); err == nil {
		t.Error("merging different notions: no error")
	}
}

// With m < n points drawn uniformly without replacement, the 95 % interval
// covers the full-data estimate in at least 90 of 100 seeded draws (every
// notion at a fixed bandwidth); the mean of the estimates is within 3
// standard errors of the mean of the 100 draws of the full value.
func TestPointSumsIntervalCoverage(t *testing.T) {
	probs, labels, k := realRows(t, 1500)
	n := len(labels)
	for _, notion := range []Notion{Canonical, TopLabel} {
		h := 0.02
		full, err := Estimate(context.Background(), notion, probs, labels, k, nil, Options{Bandwidth: h, P: []float64{1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		const draws, m = 100, 150
		covered := [2]int{}
		for seed := range uint64(draws) {
			rng := rand.New(rand.NewPCG(seed, 17))
			idx := rng.Perm(n)[:m]
			slices.Sort(idx)
			at := make([]int, n)
			for i := range at {
				at[i] = -1
			}
			pts, pl := make([]float64, 0, m*k), make([]int, 0, m)
			for j, i := range idx {
				at[i] = j
				pts = append(pts, probs[i*k:(i+1)*k]...)
				pl = append(pl, labels[i])
			}
			ps, err := NewPointSums(notion, pts, pl, k, nil, []float64{h})
			if err != nil {
				t.Fatal(err)
			}
			addInBatches(t, ps, probs, labels, k, nil, 512, func(i int) int { return at[i] }, 0)
			got, err := ps.Estimate(0, []float64{1, 2}, false, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range got.Values {
				if v.Lo <= full.Values[i].Value && full.Values[i].Value <= v.Hi {
					covered[i]++
				}
				if !(v.SE > 0) {
					t.Fatalf("%s seed %d: SE %v", notion, seed, v.SE)
				}
			}
		}
		for i, c := range covered {
			t.Logf("%s p=%v: %d of %d intervals cover %.6g", notion, full.Values[i].P, c, draws, full.Values[i].Value)
			if c < 90 {
				t.Errorf("%s p=%v: %d of %d intervals cover the full-data value", notion, full.Values[i].P, c, draws)
			}
		}
	}
}

// With the squared sums kept and every row an evaluation point,
// PointSums.Sharpness gives Sharpness's Value, Variance and Excluded
// (top_label and binary, weighted or not) to 1e-12 whatever the batches;
// shards merged in any order give one pass's value, the squares survive
// JSON, and sums without squares (or of another notion) are refused.
func TestPointSumsSharpness(t *testing.T) {
	probs, labels, k := realRows(t, 700)
	rng := rand.New(rand.NewPCG(5, 6))
	w := randWeights(rng, len(labels), true)
	const h = 0.02
	for _, notion := range []Notion{TopLabel, Binary} {
		x, y, kk := probs, labels, k
		if notion == Binary {
			x, y = binaryRows(probs, labels, k)
			kk = 2
		}
		for _, weights := range [][]float64{nil, w} {
			want, err := Sharpness(context.Background(), notion, x, y, kk, weights, Options{Bandwidth: h})
			if err != nil {
				t.Fatal(err)
			}
			ybar := want.Value - want.Variance
			ybar = math.Sqrt(ybar)
			for _, batch := range []int{len(y), 101} {
				ps, _ := NewPointSums(notion, x, y, kk, weights, []float64{0.005, h})
				if err := ps.KeepSquares(); err != nil {
					t.Fatal(err)
				}
				addInBatches(t, ps, x, y, kk, weights, batch, func(i int) int { return i }, 0)
				got, err := ps.Sharpness(1, ybar, 0)
				if err != nil {
					t.Fatal(err)
				}
				if d := relDiff(got.Value, want.Value); d > 1e-12 {
					t.Errorf("%s weighted=%v batch %d: %.17g, Sharpness %.17g (rel %.2g)", notion, weights != nil, batch, got.Value, want.Value, d)
				}
				if d := math.Abs(got.Variance - want.Variance); d > 1e-12 {
					t.Errorf("%s: variance %.17g, Sharpness %.17g", notion, got.Variance, want.Variance)
				}
				if got.Excluded != want.Excluded || got.SE != 0 || got.Lo != got.Value || got.Hi != got.Value {
					t.Errorf("%s: excluded %d (want %d), SE %v [%v, %v] with every point", notion, got.Excluded, want.Excluded, got.SE, got.Lo, got.Hi)
				}
			}
		}
	}

	// Sampled points, shards and JSON.
	m := 80
	pts, ptl := probs[:m*k], labels[:m]
	self := func(i int) int {
		if i < m {
			return i
		}
		return -1
	}
	newSums := func() *PointSums {
		ps, _ := NewPointSums(TopLabel, pts, ptl, k, nil, []float64{h})
		if err := ps.KeepSquares(); err != nil {
			t.Fatal(err)
		}
		return ps
	}
	one := newSums()
	addInBatches(t, one, probs, labels, k, nil, 700, self, 1)
	want, err := one.Sharpness(0, 0.9, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !(want.SE > 0 && want.Lo < want.Value && want.Value < want.Hi) {
		t.Errorf("m = %d of 700: SE %v, interval [%v, %v] around %v", m, want.SE, want.Lo, want.Value, want.Hi)
	}
	var parts []*PointSums
	for _, r := range [][2]int{{0, 250}, {250, 520}, {520, 700}} {
		ps := newSums()
		sl := make([]int, r[1]-r[0])
		for i := range sl {
			sl[i] = self(r[0] + i)
		}
		if err := ps.Add(context.Background(), probs[r[0]*k:r[1]*k], labels[r[0]:r[1]], nil, AddOptions{Self: sl}); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ps)
		if err != nil {
			t.Fatal(err)
		}
		back := new(PointSums)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.st.Squares, ps.st.Squares) {
			t.Fatal("JSON round trip changed the squares")
		}
		parts = append(parts, back)
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}} {
		acc := newSums()
		for _, i := range order {
			if err := acc.Merge(parts[i]); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := acc.Sharpness(0, 0.9, 0)
		if d := relDiff(got.Value, want.Value); d > 1e-12 {
			t.Errorf("merged %v: %v, one pass %v", order, got.Value, want.Value)
		}
	}
	plain, _ := NewPointSums(TopLabel, pts, ptl, k, nil, []float64{h})
	if err := one.Merge(plain); err == nil {
		t.Error("merging sums with and without squares: no error")
	}
	if _, err := plain.Sharpness(0, 0.9, 0); err == nil {
		t.Error("sharpness without squares: no error")
	}
	canon, _ := NewPointSums(Canonical, pts, ptl, k, nil, []float64{h})
	canon.KeepSquares()
	if _, err := canon.Sharpness(0, 0.9, 0); err == nil {
		t.Error("canonical sharpness: no error")
	}
	if err := one.KeepSquares(); err == nil {
		t.Error("KeepSquares after Add: no error")
	}
}

// The block-pair plan: sums of disjoint blocks of the evaluation points,
// each over every centre, joined by ConcatPointSums, are the sums of one
// PointSums over all the points bit for bit (squares too); blocks over
// other centres or grids are refused.
func TestConcatPointSums(t *testing.T) {
	probs, labels, k := realRows(t, 400)
	m := 60
	pts, ptl := probs[:m*k], labels[:m]
	for _, notion := range []Notion{Canonical, TopLabel, ClassWise} {
		one, _ := NewPointSums(notion, pts, ptl, k, nil, []float64{0.01, 0.05})
		one.KeepSquares()
		addInBatches(t, one, probs, labels, k, nil, 150, func(i int) int {
			if i < m {
				return i
			}
			return -1
		}, 1)
		var blocks []*PointSums
		for _, r := range [][2]int{{0, 20}, {20, 45}, {45, 60}} {
			b, _ := NewPointSums(notion, pts[r[0]*k:r[1]*k], ptl[r[0]:r[1]], k, nil, []float64{0.01, 0.05})
			b.KeepSquares()
			addInBatches(t, b, probs, labels, k, nil, 150, func(i int) int {
				if i >= r[0] && i < r[1] {
					return i - r[0]
				}
				return -1
			}, 2)
			blocks = append(blocks, b)
		}
		got, err := ConcatPointSums(blocks)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.st.Points, one.st.Points) || !slices.Equal(got.st.Labels, one.st.Labels) || got.st.N != one.st.N ||
			!slices.Equal(got.st.Shift, one.st.Shift) || !slices.Equal(got.st.Sums, one.st.Sums) || !slices.Equal(got.st.Squares, one.st.Squares) {
			t.Errorf("%s: joined blocks differ from one pass", notion)
		}
		short, _ := NewPointSums(notion, pts[:k], ptl[:1], k, nil, []float64{0.01, 0.05})
		short.KeepSquares()
		if _, err := ConcatPointSums(append(blocks, short)); err == nil {
			t.Errorf("%s: a block over no centres joined", notion)
		}
	}
}

// WitnessSums with every row an evaluation point (input order, the same
// seed) gives Witness's p = 1 and p = 2 values, bandwidths and exclusions
// to 1e-12 (weighted or not, any batching); shards merged in another
// order and through JSON give one pass's values; sampled points give an
// interval.
func TestWitnessSumsAllPoints(t *testing.T) {
	probs, labels, k := realRows(t, 500)
	n := len(labels)
	rng := rand.New(rand.NewPCG(9, 10))
	w := randWeights(rng, n, true)
	grid := []float64{0.005, 0.01, 0.02, 0.05, 0.1}
	for _, weights := range [][]float64{nil, w} {
		want, err := Witness(context.Background(), probs, labels, k, weights, WitnessOptions{Grid: grid, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, batch := range []int{n, 77} {
			ws, err := NewWitnessSums(probs, labels, k, weights, grid, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			for i0 := 0; i0 < n; i0 += batch {
				i1 := min(n, i0+batch)
				self := make([]int, i1-i0)
				for i := range self {
					self[i] = i0 + i
				}
				var wb []float64
				if weights != nil {
					wb = weights[i0:i1]
				}
				if err := ws.Add(context.Background(), probs[i0*k:i1*k], labels[i0:i1], wb, AddOptions{Self: self}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ws.Estimate(nil, 0, 3, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				v := want.Values[i]
				if d := math.Abs(g.Value - v.Value); d > 1e-12*math.Max(1e-3, math.Abs(v.Value)) || g.Bandwidth != v.Bandwidth || g.Excluded != v.Excluded || g.CVBandwidth != v.CVBandwidth {
					t.Errorf("weighted=%v batch %d p=%v: %.17g h %v (excl %d), Witness %.17g h %v (excl %d)", weights != nil, batch, g.P, g.Value, g.Bandwidth, g.Excluded, v.Value, v.Bandwidth, v.Excluded)
				}
				if g.SE != 0 || g.Lo != g.Value {
					t.Errorf("p=%v: SE %v with every point", g.P, g.SE)
				}
			}
		}
	}
	// 60 sampled points, 3 shards merged in reverse order through JSON.
	m := 60
	self := func(i int) int {
		if i < m {
			return i
		}
		return -1
	}
	newSums := func() *WitnessSums {
		ws, _ := NewWitnessSums(probs[:m*k], labels[:m], k, nil, grid, 0.5)
		return ws
	}
	one := newSums()
	s := make([]int, n)
	for i := range s {
		s[i] = self(i)
	}
	if err := one.Add(context.Background(), probs, labels, nil, AddOptions{Self: s}); err != nil {
		t.Fatal(err)
	}
	want, err := one.Estimate(nil, 0, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	acc := newSums()
	for _, r := range [][2]int{{300, 500}, {120, 300}, {0, 120}} {
		part := newSums()
		if err := part.Add(context.Background(), probs[r[0]*k:r[1]*k], labels[r[0]:r[1]], nil, AddOptions{Self: s[r[0]:r[1]]}); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(part)
		if err != nil {
			t.Fatal(err)
		}
		back := new(WitnessSums)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if err := acc.Merge(back); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Estimate(nil, 0, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if d := math.Abs(got[i].Value - want[i].Value); d > 1e-12*math.Max(1e-3, math.Abs(want[i].Value)) {
			t.Errorf("merged p=%v: %v, one pass %v", got[i].P, got[i].Value, want[i].Value)
		}
		if !(got[i].SE > 0 && got[i].Lo < got[i].Value && got[i].Value < got[i].Hi) {
			t.Errorf("p=%v: m = %d of %d: SE %v [%v, %v]", got[i].P, m, n, got[i].SE, got[i].Lo, got[i].Hi)
		}
	}
	// Blocks of the points, each over all centres, joined.
	var blocks []*WitnessSums
	for _, r := range [][2]int{{0, 25}, {25, 60}} {
		b, _ := NewWitnessSums(probs[r[0]*k:r[1]*k], labels[r[0]:r[1]], k, nil, grid, 0.5)
		sb := make([]int, n)
		for i := range sb {
			sb[i] = -1
			if i >= r[0] && i < r[1] {
				sb[i] = i - r[0]
			}
		}
		if err := b.Add(context.Background(), probs, labels, nil, AddOptions{Self: sb}); err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	joined, err := ConcatWitnessSums(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(joined.st.S, one.st.S) || !slices.Equal(joined.st.E, one.st.E) || !slices.Equal(joined.st.P, one.st.P) || !slices.Equal(joined.st.Q, one.st.Q) || !slices.Equal(joined.st.Shift, one.st.Shift) {
		t.Error("joined blocks differ from one pass")
	}
	for _, bad := range []string{`{"version":2}`, `{"version":1,"k":10,"grid":[0.1]}`} {
		if err := json.Unmarshal([]byte(bad), new(WitnessSums)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := acc.Merge(&WitnessSums{st: witnessSumsState{K: k, Grid: []float64{1}}}); err == nil {
		t.Error("merging another grid: no error")
	}
}
