package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
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

func fmtG(x float64) string { b, _ := data.Float(x).MarshalJSON(); return string(b) }

type writerCounter int

func (w *writerCounter) Write(p []byte) (int, error) { *w += writerCounter(len(p)); return len(p), nil }

// TestSumsStateChecked: a decoded Sums is checked for consistency and
// refused with a message naming the field: n edited to -5 or 10^6, the
// weight total to 0 or 1e308, scores.correct_sum times 5 (an accuracy of
// 3.95 was reported), a configuration edited from 15 to 20 bins over
// 15-bin sums (15 were used), a metric dropped from the configuration
// with its sums kept, or its sums dropped; merging a shard's sums with a copy of
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
	ws := s.Rows(0, s.N)
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	state := func(set *data.Set, o StreamOptions) map[string]any {
		t.Helper()
		sums, err := NewSums(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := sums.Add(&data.Batch{Set: set, Source: "part-0.csv"}); err != nil {
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
	o := StreamOptions{Options: Options{Metrics: MetricSet{"ece_bin", "brier", "accuracy", "ks"}}}
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
		{"ks dropped from the metrics, its sums kept", false, func(m map[string]any) {
			m["config"].(map[string]any)["metrics"] = []any{"ece_bin", "brier", "accuracy"}
		}, "sums of a metric the configuration does not have"},
		{"ks's sums dropped", false, func(m map[string]any) { delete(m, "ks_class") }, "missing KS sums"},
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
	if err := a.Add(&data.Batch{Set: s, Source: "part-0.csv"}); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(a)
	var copyOf Sums
	if err := json.Unmarshal(b, &copyOf); err != nil {
		t.Fatal(err)
	}
	if err := a.Merge(&copyOf); err == nil || !strings.Contains(err.Error(), "the same rows twice") || a.st.N != 200 {
		t.Errorf("merged with itself: %v, n = %d", err, a.st.N)
	}
	if err := a.Add(&data.Batch{Set: s.Rows(50, 60), Source: "part-0.csv", Offset: 50}); err == nil || !strings.Contains(err.Error(), "rows 51 to 60") {
		t.Errorf("rows added twice: %v", err)
	}
	// Other rows of the same source, and another source, merge.
	c, _ := NewSums(o)
	c.Add(&data.Batch{Set: s.Rows(0, 100), Source: "part-1.csv"})
	d, _ := NewSums(o)
	d.Add(&data.Batch{Set: s.Rows(100, 200), Source: "part-1.csv", Offset: 100})
	if err := c.Merge(d); err != nil || c.st.N != 200 || len(c.st.Rows) != 1 || c.st.Rows[0].To != 200 {
		t.Errorf("two halves of one source: %v, n = %d, rows %+v", err, c.st.N, c.st.Rows)
	}
	if err := a.Merge(c); err != nil || a.st.N != 400 {
		t.Errorf("another source: %v, n = %d", err, a.st.N)
	}
}

// TestRowRanges: adding runs of rows one by one (rowsOverlap, addRows) and
// merging two lists (mergeRows) agree with a brute-force set of (source,
// row) on 2,000 random cases: overlaps refused, adjacent runs joined, the
// list sorted.
func TestRowRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	type key struct {
		src string
		row int64
	}
	build := func(n int) ([]rowRange, map[key]bool, bool) {
		var rs []rowRange
		set := map[key]bool{}
		refused := false
		for range n {
			src := string(rune('a' + rng.IntN(3)))
			from := int64(rng.IntN(40))
			to := from + 1 + int64(rng.IntN(6))
			i, err := rowsOverlap(rs, src, from, to)
			overlap := false
			for r := from; r < to; r++ {
				overlap = overlap || set[key{src, r}]
			}
			if (err != nil) != overlap {
				t.Fatalf("rows %s %d-%d: error %v, brute force overlap %v (%+v)", src, from, to, err, overlap, rs)
			}
			if err != nil {
				refused = true
				continue
			}
			rs = addRows(rs, i, src, from, to)
			for r := from; r < to; r++ {
				set[key{src, r}] = true
			}
		}
		return rs, set, refused
	}
	check := func(rs []rowRange, set map[key]bool) {
		t.Helper()
		n := 0
		for i, r := range rs {
			if i > 0 && (compareRanges(rs[i-1], r) >= 0 || rs[i-1].Source == r.Source && rs[i-1].To >= r.From) {
				t.Fatalf("not sorted, overlapping or not joined: %+v", rs)
			}
			for x := r.From; x < r.To; x++ {
				if !set[key{r.Source, x}] {
					t.Fatalf("%s row %d listed, not added", r.Source, x)
				}
				n++
			}
		}
		if n != len(set) {
			t.Fatalf("%d rows listed, %d added", n, len(set))
		}
	}
	for range 2000 {
		a, sa, _ := build(1 + rng.IntN(8))
		check(a, sa)
		b, sb, _ := build(1 + rng.IntN(8))
		both := false
		union := map[key]bool{}
		for k := range sa {
			union[k] = true
		}
		for k := range sb {
			both = both || union[k]
			union[k] = true
		}
		m, err := mergeRows(a, b)
		if (err != nil) != both {
			t.Fatalf("merge %+v and %+v: error %v, brute force overlap %v", a, b, err, both)
		}
		if err == nil {
			check(m, union)
		}
	}
}

// TestSampleNoClusters: predictions with few distinct values spread over
// many shards (rounded or isotonic outputs) are sampled row by row, not in
// clusters of equal rows at the same index of different shards (keys of
// values and index alone gave 2,000 sampled rows only 42 distinct keys on
// such data); the keys never read the shard's name.
func TestSampleNoClusters(t *testing.T) {
	const shards, rows, m = 400, 50, 2000
	smp := &sample{M: m, Seed: 3, K: 2}
	named := &sample{M: m, Seed: 3, K: 2}
	for sh := range shards {
		p := make([]float64, 2*rows)
		y := make([]int, rows)
		for i := range rows {
			v := float64((sh*7+i*3)%11) / 10
			p[2*i], p[2*i+1] = 1-v, v
			y[i] = (sh + i) % 2
		}
		smp.add(fmt.Sprintf("part-%d.csv", sh), sh, 0, p, y, nil)
		named.add(fmt.Sprintf("/abs/other/part-%05d.parquet", sh), sh, 0, p, y, nil)
	}
	smp.compact()
	named.compact()
	keys := map[uint64]int{}
	for _, r := range smp.Rows {
		keys[r.Key]++
	}
	if len(smp.Rows) != m || len(keys) != m {
		t.Errorf("%d sampled rows with %d distinct keys, want %d of each", len(smp.Rows), len(keys), m)
	}
	for i, r := range smp.Rows {
		if o := named.Rows[i]; o.Key != r.Key || o.Row != r.Row {
			t.Fatalf("row %d: key %x (row %d) with other shard names, %x (row %d)", i, o.Key, o.Row, r.Key, r.Row)
		}
	}
	// Every shard is about equally represented: 2,000 of 20,000 rows.
	per := map[string]int{}
	for _, r := range smp.Rows {
		per[r.Source]++
	}
	most := 0
	for _, c := range per {
		most = max(most, c)
	}
	if len(per) < shards*9/10 || most > 20 {
		t.Errorf("%d of %d shards sampled, at most %d rows from one (expected about 5)", len(per), shards, most)
	}
}

// TestWeightsScaleFreeBins: the estimators that read weights as counts
// (equal-mass edges, the Doane and sqrt rules, the debiased L2) give the
// same values for integer weights times 0.1, 1e-300 and 3 as for the
// weights as given (ties of the order statistics counted as ties after
// the rounding: an edge jumped to the next score, 0.095702 against
// 0.095404), and a 0/1 mask gives the values of the set without the rows
// of weight 0 (the rows of weight 0 counted in n gave 18 sqrt bins
// where the dropped rows give 15).
func TestWeightsScaleFreeBins(t *testing.T) {
	base, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := MetricSet{"ece_bin", "mce", "ece_bin_debiased"}
	opts := []metric.BinOptions{
		{Binning: metric.EqualMass, Bins: 4}, {Binning: metric.EqualMass, Rule: metric.Doane},
		{Rule: metric.Sqrt}, {Rule: metric.Doane}, {Binning: metric.EqualMass, Rule: metric.Sqrt},
	}
	eval := func(s *data.Set, bo metric.BinOptions) *Evaluation {
		t.Helper()
		ev, err := Evaluate(context.Background(), s, Options{Metrics: metrics, Strict: true, Bins: bo})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	weighted := func(w []float64) *data.Set {
		s := base.Rows(0, base.N)
		if err := s.SetWeights(w); err != nil {
			t.Fatal(err)
		}
		return s
	}
	same := func(what string, a, b *Evaluation) {
		t.Helper()
		for i, x := range a.Results {
			y := b.Results[i]
			u, v := float64(*x.Value), float64(*y.Value)
			if math.Abs(u-v) > 1e-12*max(1, math.Abs(u)) || *x.Bins != *y.Bins {
				t.Errorf("%s: %s %s: %v (%d bins) and %v (%d bins)", what, x.Metric, x.Notion, u, *x.Bins, v, *y.Bins)
			}
		}
	}
	w := make([]float64, base.N)
	rng := rand.New(rand.NewPCG(28, 3))
	for i := range w {
		w[i] = float64(1 + rng.IntN(3))
	}
	for _, bo := range opts {
		ref := eval(weighted(w), bo)
		for _, c := range []float64{0.1, 1e-300, 3} {
			sw := make([]float64, len(w))
			for i, v := range w {
				sw[i] = v * c
			}
			same(fmt.Sprintf("%+v, weights x %g", bo, c), ref, eval(weighted(sw), bo))
		}
		// A 0/1 mask is the set without the rows of weight 0.
		mask := make([]float64, base.N)
		var kept []int
		for i := range mask {
			if i%3 != 0 {
				mask[i] = 1
				kept = append(kept, i)
			}
		}
		var probs []float64
		var labels []int
		for _, i := range kept {
			probs, labels = append(probs, base.Row(i)...), append(labels, base.Labels[i])
		}
		dropped, err := data.New(probs, base.K, labels, false, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("%+v, a 0/1 mask against the rows dropped", bo), eval(weighted(mask), bo), eval(dropped, bo))
	}
}

// TestMergeRefusesMissingPart: a shard's sums that lack a part their
// metrics use (its state nil) are refused before anything is merged, for
// every part, with a message naming the part's sums.
func TestMergeRefusesMissingPart(t *testing.T) {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := StreamOptions{Options: Options{Metrics: MetricSet{ECEBin, KS, SmECE, ECEVariational, MMCE}}, EvalPoints: 50}
	sums := func(i0, i1 int) *Sums {
		t.Helper()
		x, err := NewSums(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Add(&data.Batch{Set: s.Rows(i0, i1), Source: "a.csv", Offset: int64(i0)}); err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		drop func(st *sumsState)
		want string
	}{
		{func(st *sumsState) { st.Top, st.Class, st.Cells = nil, nil, nil }, "the binned metrics'"},
		{func(st *sumsState) { st.KSTop, st.KSWith, st.KSClass = nil, nil, nil }, "ks's"},
		{func(st *sumsState) { st.SmECESums = nil }, "smece's"},
		{func(st *sumsState) { st.Variational = nil }, "ece_variational's samples"},
		{func(st *sumsState) { st.Sample = nil }, "the evaluation points' sample"},
	} {
		a, b := sums(0, 100), sums(100, 200)
		c.drop(&b.st)
		if err := a.Merge(b); err == nil || !strings.HasSuffix(err.Error(), "sums with and without "+c.want) || a.st.N != 100 || len(a.st.Rows) != 1 || a.st.Rows[0].To != 100 {
			t.Errorf("%s: %v, n = %d", c.want, err, a.st.N)
		}
	}
}
