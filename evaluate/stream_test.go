package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// realSets returns the three real sets in the repository: the embedded
// CIFAR-10 ResNet-110 test set and the val sets of
// testdata/logits (CIFAR-10 DenseNet-121 FLSD-53, CIFAR-100 ResNet-110).
func realSets(t *testing.T) []*data.Set {
	t.Helper()
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	out := []*data.Set{s}
	for _, dir := range []string{"cifar10_densenet121-flsd53", "cifar100_resnet110-brier"} {
		d := "../testdata/logits/" + dir + "/"
		s, err := data.Load(d+"val_logits.npy", data.Options{Labels: d + "val_labels.npy", Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// shards is a Source of several shards of one set, read in a given order.
type shards struct {
	sets  []*data.Set
	rows  int
	order []int
}

func (sh *shards) Open() (data.Batches, error) {
	var bs []*data.Batch
	for _, i := range sh.order {
		b, _ := data.SetSource(sh.sets[i], sh.rows).Open()
		for {
			x, err := b.Next()
			if err == io.EOF {
				break
			}
			bs = append(bs, x)
		}
	}
	return &list{bs: bs}, nil
}

type list struct{ bs []*data.Batch }

func (l *list) Next() (*data.Batch, error) {
	if len(l.bs) == 0 {
		return nil, io.EOF
	}
	b := l.bs[0]
	l.bs = l.bs[1:]
	return b, nil
}
func (l *list) Close() error { return nil }

// split cuts s into n shards named name-0, name-1, ...
func split(s *data.Set, n int) []*data.Set {
	out := make([]*data.Set, n)
	for i := range out {
		r := s.Rows(i*s.N/n, (i+1)*s.N/n)
		r.File = fmt.Sprintf("%s-%d", s.File, i)
		out[i] = r
	}
	return out
}

// key identifies a Result across evaluations.
func key(e *Result) string {
	k := string(e.Metric) + "/" + string(e.Notion)
	if e.P != nil {
		k += fmt.Sprintf("/p%v", *e.P)
	}
	if e.R != nil {
		k += fmt.Sprintf("/r%d", *e.R)
	}
	return k
}

// The streamed evaluation of the real sets, in batches and shards in any
// order, gives Evaluate's exact metrics to 1e-12 (scores, binned on fixed
// bins: top-label, class-wise, canonical cells), KS bounds that hold the
// in-memory KS, and, with every row an evaluation point at a fixed
// bandwidth, Evaluate's ece_kde to 1e-12 (interval of width 0).
func TestStreamMatchesEvaluate(t *testing.T) {
	ctx := context.Background()
	for si, s := range realSets(t) {
		if si == 2 {
			s = s.Rows(0, 1500) // K = 100: keep the O(n^2) part short
		}
		h := 0.02
		metrics := MetricSet{"ece_kde", "ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "sharpness", "brier", "nll", "accuracy", "confidence"}
		mem, err := Evaluate(ctx, s, Options{Bandwidth: Bandwidth(h), NoBandwidthCheck: true, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, Strict: true, Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]*Result{}
		for _, e := range mem.Results {
			want[key(e)] = e
		}
		for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
			src := &shards{sets: split(s, 3), rows: 777, order: order}
			got, err := Stream(ctx, src, StreamOptions{Options: Options{Bandwidth: Bandwidth(h), Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, Metrics: metrics}, EvalPoints: AllPoints})
			if err != nil {
				t.Fatal(err)
			}
			if got.N != s.N || got.K != s.K {
				t.Fatalf("n, K = %d, %d; want %d, %d", got.N, got.K, s.N, s.K)
			}
			if len(got.Results) != len(mem.Results) {
				t.Errorf("%s: %d results, in memory %d", s.File, len(got.Results), len(mem.Results))
			}
			for i, e := range got.Results {
				w := want[key(e)]
				if w == nil {
					t.Errorf("%s: %s not in memory", s.File, key(e))
					continue
				}
				if i < len(mem.Results) && key(mem.Results[i]) != key(e) {
					t.Errorf("%s: result %d is %s, in memory %s", s.File, i, key(e), key(mem.Results[i]))
				}
				if e.Error != "" {
					t.Errorf("%s: %s: %s", s.File, key(e), e.Error)
					continue
				}
				gv, wv := float64(*e.Value), float64(*w.Value)
				if e.Metric == "ks" {
					lo, hi := float64(e.Interval[0]), float64(e.Interval[1])
					if !(lo <= wv+1e-12 && wv <= hi+1e-12) || hi-lo > 2e-3 {
						t.Errorf("%s: %s: in memory %v outside the bounds [%v, %v]", s.File, key(e), wv, lo, hi)
					}
					continue
				}
				if d := math.Abs(gv - wv); d > 1e-12*math.Max(1, math.Abs(wv)) {
					t.Errorf("%s: %s = %.17g, in memory %.17g", s.File, key(e), gv, wv)
				}
				if w.Variance != nil && math.Abs(float64(*e.Variance)-float64(*w.Variance)) > 1e-12 {
					t.Errorf("%s: %s: variance %v, in memory %v", s.File, key(e), *e.Variance, *w.Variance)
				}
				if (e.Metric == "ece_kde" || e.Metric == "mmce" || e.Metric == "sharpness") && (e.IntervalKind != "exact" || e.Interval[0] != e.Interval[1]) {
					t.Errorf("%s: %s: every row evaluated, yet interval %v (%s)", s.File, key(e), e.Interval, e.IntervalKind)
				}
				if (e.PerClass == nil) != (w.PerClass == nil) || e.Weighted != w.Weighted || e.Estimator != w.Estimator || e.BinRule != w.BinRule {
					t.Errorf("%s: %s: definition keys differ: %+v against %+v", s.File, key(e), e, w)
				}
			}
		}
	}
}

// Weighted rows: the streamed exact metrics equal the weighted in-memory
// ones, and the intervals of the sampled estimates (m = 400 of 3,000)
// hold the full-data value for most of 10 samples (seeds 3..12). With
// these log-normal weights they hold it in 7 to 10 of 10, below their 95 %
// (the ratio estimator's linearised SE at m = 400 with heavy-tailed
// weights; EXPERIMENTS.md section 7 measures the intervals): at least 7 is asked, and 5
// of mmce, whose root of a noisy square is biased low here (the mean of 30
// samples 0.0180 against the full 0.0204; unweighted 0.0205 against
// 0.0203) and whose interval held the value in 6 of 10.
func TestStreamWeighted(t *testing.T) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float64, s.N)
	for i := range w {
		w[i] = math.Exp(rng.NormFloat64())
	}
	if err := s.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mem, err := Evaluate(ctx, s, Options{Bandwidth: 0.02, NoBandwidthCheck: true, Mode: NotionSet{Notions: []kde.Notion{kde.TopLabel}}, Metrics: MetricSet{"ece_kde", "ece_bin", "mmce", "sharpness", "brier", "nll"}, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	holds := map[string]int{}
	for seed := uint64(3); seed < 13; seed++ {
		got, err := Stream(ctx, data.SetSource(s, 1000), StreamOptions{Options: Options{Bandwidth: 0.02, Mode: NotionSet{Notions: []kde.Notion{kde.TopLabel}}, Metrics: MetricSet{"ece_kde", "ece_bin", "mmce", "sharpness", "brier", "nll"}, Seed: seed}, EvalPoints: 400})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range got.Results {
			wv, gv := float64(*mem.Results[i].Value), float64(*e.Value)
			if !e.Weighted {
				t.Errorf("%s: not marked weighted", key(e))
			}
			if e.Metric == "ece_kde" || e.Metric == "mmce" || e.Metric == "sharpness" {
				if *e.EvalPoints != 400 {
					t.Errorf("%s: m = %d", key(e), *e.EvalPoints)
				}
				if float64(e.Interval[0]) <= wv && wv <= float64(e.Interval[1]) {
					holds[key(e)]++
				} else {
					t.Logf("%s, seed %d: %v [%v, %v] does not hold %v", key(e), seed, gv, e.Interval[0], e.Interval[1], wv)
				}
				continue
			}
			if math.Abs(gv-wv) > 1e-12*math.Max(1, wv) {
				t.Errorf("%s = %v, in memory %v", key(e), gv, wv)
			}
		}
	}
	t.Logf("of 10 samples, the intervals that hold the full-data value: %v", holds)
	for k, v := range holds {
		if v < 7 && !(k == "mmce/top_label" && v >= 5) {
			t.Errorf("%s: the interval held the full-data value in %d of 10 samples", k, v)
		}
	}
	if len(holds) != 4 {
		t.Errorf("sampled entries %v, want ece_kde p = 1, 2, mmce, sharpness", holds)
	}
}

// The two passes' state survives its JSON form: sums marshalled after each
// shard and merged give the results of one pass; the same batches give
// bit-identical results for any worker count.
func TestStreamSumsMergeJSON(t *testing.T) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 2000)
	o := StreamOptions{Options: Options{Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}}, EvalPoints: 300}
	whole, err := Stream(context.Background(), data.SetSource(s, 500), o)
	if err != nil {
		t.Fatal(err)
	}
	parts := split(s, 4)
	total, _ := NewSums(o)
	for _, p := range parts {
		sp, _ := NewSums(o)
		if err := sp.Add(&data.Batch{Set: p, Source: s.File, Offset: int64(partOffset(parts, p))}); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(sp)
		if err != nil {
			t.Fatal(err)
		}
		var back Sums
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := total.Merge(&back); err != nil {
			t.Fatal(err)
		}
	}
	ks, err := total.KernelSums()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(parts) - 1; i >= 0; i-- { // the other order
		p := parts[i]
		kp, _ := total.KernelSums()
		if err := kp.Add(context.Background(), &data.Batch{Set: p, Source: s.File, Offset: int64(partOffset(parts, p))}, 1); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(kp)
		var back KernelSums
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := ks.Merge(&back); err != nil {
			t.Fatal(err)
		}
	}
	merged, err := Finish(total, ks)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range merged.Results {
		w := whole.Results[i]
		if key(e) != key(w) {
			t.Fatalf("result %d: %s, one pass %s", i, key(e), key(w))
		}
		if d := math.Abs(float64(*e.Value) - float64(*w.Value)); d > 1e-12*math.Max(1, math.Abs(float64(*w.Value))) {
			t.Errorf("%s: merged %v, one pass %v", key(e), *e.Value, *w.Value)
		}
	}
	again, err := Stream(context.Background(), data.SetSource(s, 500), StreamOptions{Options: Options{Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, Workers: 1}, EvalPoints: 300})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range again.Results {
		if *e.Value != *whole.Results[i].Value {
			t.Errorf("%s: 1 worker %v, all %v", key(e), *e.Value, *whole.Results[i].Value)
		}
	}
}

func partOffset(parts []*data.Set, p *data.Set) int {
	off := 0
	for _, q := range parts {
		if q == p {
			return off
		}
		off += q.N
	}
	return -1
}

// Options a stream cannot honour are refused before any data is read.
func TestStreamOptionsRefused(t *testing.T) {
	for _, o := range []StreamOptions{
		{Options: Options{CI: true}},
		{Options: Options{Debias: true}},
		{Options: Options{Metrics: MetricSet{"ece_witness"}, P: []float64{3}}},
		{Options: Options{Objective: kde.Reference}},
		{Options: Options{Metrics: MetricSet{"nope"}}},
		{Options: Options{P: []float64{0.5}}},
		{EvalPoints: -2},
		{Options: Options{Bins: metric.BinOptions{Bins: -3}}},
		{Grid: []float64{0.1, 0.01}},
	} {
		if _, err := NewSums(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// Every row as an evaluation point is refused past MaxAllPoints rows,
// after the first pass (the number of rows is known only then).
func TestStreamAllPointsBound(t *testing.T) {
	s, err := NewSums(StreamOptions{EvalPoints: AllPoints, Options: Options{Metrics: MetricSet{"ece_kde"}}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := demoSet("test")
	b := &data.Batch{Set: d.Rows(0, 10), Source: "x"}
	if err := s.Add(b); err != nil {
		t.Fatal(err)
	}
	s.st.N = int64(MaxAllPoints) + 1 // as after that many rows
	if _, err := s.KernelSums(); err == nil || !strings.Contains(err.Error(), "evaluation points") {
		t.Errorf("n > MaxAllPoints with every row: %v", err)
	}
}

// A row with an exact zero that no other row shares in its class leaves
// that (class, point) out of the marginal LOO, as in memory, instead of
// making every bandwidth -Inf; merging sums of other options is an error,
// and --metrics (Strict) makes a failing metric fail the stream.
func TestStreamEdgeCases(t *testing.T) {
	d, _ := demoSet("test")
	s := d.Rows(0, 800)
	probs := append([]float64(nil), s.Probs...)
	row := probs[:s.K]
	row[9], row[0] = 0, row[0]+row[9]
	z, err := data.New(probs, s.K, s.Labels, false, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Stream(context.Background(), data.SetSource(z, 300), StreamOptions{Options: Options{Mode: NotionSet{Notions: []kde.Notion{kde.ClassWise}}, Metrics: MetricSet{"ece_kde"}}, EvalPoints: AllPoints}); err != nil {
		t.Errorf("marginal with a unique zero: %v", err)
	}
	a, _ := NewSums(StreamOptions{Options: Options{P: []float64{1}}})
	b, _ := NewSums(StreamOptions{Options: Options{P: []float64{2}}})
	for _, x := range []*Sums{a, b} {
		if err := x.Add(&data.Batch{Set: d.Rows(0, 10), Source: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Merge(b); err == nil {
		t.Error("merging sums of different p: no error")
	}
	for _, bad := range []string{`{"version":1,"config":{"metrics":["ece_bin"],"m":10,"ks_cells":5,"bins":{"Bins":15}},"k":10,"scores":{"version":1}}`, `{"version":1,"config":{}}`} {
		var s Sums
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	one := d.Rows(0, 1)
	if _, err := Stream(context.Background(), data.SetSource(one, 10), StreamOptions{Options: Options{Metrics: MetricSet{"ece_kde"}, Strict: true}}); err == nil {
		t.Error("one row, ece_kde asked for: no error")
	}
	if _, err := Stream(context.Background(), data.SetSource(d.Rows(0, 50), 10), StreamOptions{Options: Options{Metrics: MetricSet{"ks"}, KS: KSOptions{R: []int{11}}}}); err == nil {
		t.Error("ks r = 11 > K = 10: no error")
	}
}

// sharpness without ece_kde's top-label sums (mode canonical, or only
// sharpness) gets its own squared sums; binary input gets the binary
// notion: every row an evaluation point gives Evaluate's value and
// variance to 1e-12, through JSON and merged shards too.
func TestStreamSharpnessOwnSums(t *testing.T) {
	ctx := context.Background()
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 1200)
	p1 := make([]float64, s.N)
	y1 := make([]int, s.N)
	for i := range p1 {
		p1[i] = s.Probs[i*s.K+3]
		if s.Labels[i] == 3 {
			y1[i] = 1
		}
	}
	bin, err := data.New(p1, 1, y1, false, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bin.File = "binary"
	for _, tc := range []struct {
		set     *data.Set
		mode    NotionSet
		metrics MetricSet
		notion  string
	}{
		{s, NotionSet{Notions: []kde.Notion{kde.Canonical}}, MetricSet{"ece_kde", "sharpness"}, "top_label"},
		{s, NotionSet{}, MetricSet{"sharpness"}, "top_label"},
		{bin, NotionSet{}, MetricSet{"ece_kde", "sharpness"}, "binary"},
		{bin, NotionSet{Notions: []kde.Notion{kde.TopLabel}}, MetricSet{"sharpness"}, "binary"},
	} {
		o := Options{Bandwidth: 0.03, NoBandwidthCheck: true, Mode: tc.mode, Metrics: tc.metrics, Strict: true}
		mem, err := Evaluate(ctx, tc.set, o)
		if err != nil {
			t.Fatal(err)
		}
		want := find(t, mem, "sharpness")
		so := StreamOptions{Options: Options{Bandwidth: 0.03, Mode: tc.mode, Metrics: tc.metrics}, EvalPoints: AllPoints}
		sums, _ := NewSums(so)
		parts := split(tc.set, 2)
		for _, p := range parts {
			if err := sums.Add(&data.Batch{Set: p, Source: "x", Offset: int64(partOffset(parts, p))}); err != nil {
				t.Fatal(err)
			}
		}
		ks, err := sums.KernelSums()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			kp, _ := sums.KernelSums()
			if err := kp.Add(ctx, &data.Batch{Set: p, Source: "x", Offset: int64(partOffset(parts, p))}, 0); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(kp)
			var back KernelSums
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if err := ks.Merge(&back); err != nil {
				t.Fatal(err)
			}
		}
		if own := ks.st.Sharpness != nil; own != (tc.mode.String() == "canonical" || len(tc.metrics) == 1) {
			t.Errorf("%s mode %q %v: own sharpness sums %v", tc.set.File, tc.mode, tc.metrics, own)
		}
		ev, err := Finish(sums, ks)
		if err != nil {
			t.Fatal(err)
		}
		got := find(t, ev, "sharpness")
		if string(got.Notion) != tc.notion || got.Notion != want.Notion {
			t.Errorf("notion %s, in memory %s, want %s", got.Notion, want.Notion, tc.notion)
		}
		if d := math.Abs(float64(*got.Value) - float64(*want.Value)); d > 1e-12 {
			t.Errorf("%s mode %q: sharpness %v, in memory %v", tc.set.File, tc.mode, *got.Value, *want.Value)
		}
		if d := math.Abs(float64(*got.Variance) - float64(*want.Variance)); d > 1e-12 {
			t.Errorf("%s mode %q: variance %v, in memory %v", tc.set.File, tc.mode, *got.Variance, *want.Variance)
		}
	}
}

// find returns the first result of metric m.
func find(t *testing.T, ev *Evaluation, m Metric) *Result {
	t.Helper()
	for _, e := range ev.Results {
		if e.Metric == m {
			if e.Error != "" {
				t.Fatalf("%s: %s", m, e.Error)
			}
			return e
		}
	}
	t.Fatalf("no %s in %d results", m, len(ev.Results))
	return nil
}

// Data-dependent bins (equal-mass edges, the Doane and Sqrt rules) in a
// stream: the sketch of the first pass and the scores near the edges of
// the second give Evaluate's ece_bin (p = 1, 2), mce and ece_bin_debiased
// on the real sets, top-label, class-wise and canonical (the cells' number
// from the rule), with and without weights, to 1e-12, with no bound or
// warning; the sums go through JSON and merge.
func TestStreamDataBins(t *testing.T) {
	ctx := context.Background()
	metrics := MetricSet{"ece_bin", "mce", "ece_bin_debiased"}
	sets := realSets(t)
	sets[2] = sets[2].Rows(0, 800) // K = 100: its 101 sketches are as large as the data at this n
	rng := rand.New(rand.NewPCG(7, 8))
	w := make([]float64, sets[0].N)
	for i := range w {
		w[i] = float64(1 + rng.IntN(3))
	}
	weighted := sets[0].Rows(0, sets[0].N)
	if err := weighted.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	sets = append(sets, weighted)
	rules := []metric.BinOptions{
		{Binning: metric.EqualMass}, {Binning: metric.EqualMass, Rule: metric.Doane},
		{Rule: metric.Sqrt}, {Rule: metric.Doane}, {Binning: metric.EqualMass, Bins: 7},
	}
	for _, s := range sets {
		for _, bins := range rules {
			mem, err := Evaluate(ctx, s, Options{Metrics: metrics, P: []float64{1, 2}, Bins: bins, Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			o := StreamOptions{Options: Options{Metrics: metrics, P: []float64{1, 2}, Bins: bins}}
			sums, _ := NewSums(o)
			parts := split(s, 3)
			for _, p := range parts {
				sp, _ := NewSums(o)
				if err := sp.Add(&data.Batch{Set: p, Source: "x", Offset: int64(partOffset(parts, p))}); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(sp)
				var back Sums
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				if err := sums.Merge(&back); err != nil {
					t.Fatal(err)
				}
			}
			if !sums.KernelPass() {
				t.Fatalf("%v: no second pass", bins)
			}
			ks, err := sums.KernelSums()
			if err != nil {
				t.Fatal(err)
			}
			for i := len(parts) - 1; i >= 0; i-- {
				kp, _ := sums.KernelSums()
				if err := kp.Add(ctx, &data.Batch{Set: parts[i], Source: "x", Offset: int64(partOffset(parts, parts[i]))}, 0); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(kp)
				var back KernelSums
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				if err := ks.Merge(&back); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Finish(sums, ks)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Results) != len(mem.Results) {
				t.Fatalf("%s %v: %d results, in memory %d", s.File, bins, len(got.Results), len(mem.Results))
			}
			for i, e := range got.Results {
				want := mem.Results[i]
				if key(e) != key(want) || e.Error != "" {
					t.Fatalf("%s %v: result %d %s (%s), in memory %s", s.File, bins, i, key(e), e.Error, key(want))
				}
				if d := math.Abs(float64(*e.Value) - float64(*want.Value)); d > 1e-12*math.Max(1, math.Abs(float64(*want.Value))) {
					t.Errorf("%s %v: %s = %.17g, in memory %.17g", s.File, bins, key(e), *e.Value, *want.Value)
				}
				if *e.Bins != *want.Bins || !slices.Equal(e.PerClassBins, want.PerClassBins) || len(e.Warnings) != len(want.Warnings) || e.Interval != nil {
					t.Errorf("%s %v: %s: bins %d %v, warnings %v, interval %v; in memory %d %v, %v", s.File, bins, key(e), *e.Bins, e.PerClassBins, e.Warnings, e.Interval, *want.Bins, want.PerClassBins, want.Warnings)
				}
			}
		}
	}
}

// The block-pair plan: second-pass sums per (block of evaluation points,
// shard), merged per block and joined by ConcatKernelSums (blocks in any
// order), give the unblocked evaluation bit for bit; with every row a
// point at a fixed bandwidth that is Evaluate's ece_kde, sharpness and
// mmce. Unjoined blocks, missing blocks and mixed blocks are refused.
func TestStreamBlocks(t *testing.T) {
	ctx := context.Background()
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 1500)
	metrics := MetricSet{"ece_kde", "mmce", "sharpness", "ece_bin", "mce", "brier"}
	for _, o := range []StreamOptions{
		{Options: Options{Bandwidth: 0.02, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, Metrics: metrics, Bins: metric.BinOptions{Rule: metric.Sqrt}}, EvalPoints: AllPoints},
		{Options: Options{Mode: NotionSet{Notions: []kde.Notion{kde.ClassWise}}, Metrics: metrics}, EvalPoints: 200},
	} {
		parts := split(s, 3)
		batch := func(p *data.Set) *data.Batch {
			return &data.Batch{Set: p, Source: "x", Offset: int64(partOffset(parts, p))}
		}
		sums, _ := NewSums(o)
		for _, p := range parts {
			if err := sums.Add(batch(p)); err != nil {
				t.Fatal(err)
			}
		}
		var whole *KernelSums // per shard, merged in shard order
		for _, p := range parts {
			kp, err := sums.KernelSums()
			if err != nil {
				t.Fatal(err)
			}
			if err := kp.Add(ctx, batch(p), 0); err != nil {
				t.Fatal(err)
			}
			if whole == nil {
				whole = kp
			} else if err := whole.Merge(kp); err != nil {
				t.Fatal(err)
			}
		}
		want, err := Finish(sums, whole)
		if err != nil {
			t.Fatal(err)
		}
		const nb = 4
		blocks := make([]*KernelSums, nb)
		for _, b := range []int{2, 0, 3, 1} {
			for _, p := range parts {
				kp, err := sums.KernelSumsBlock(b, nb)
				if err != nil {
					t.Fatal(err)
				}
				if err := kp.Add(ctx, batch(p), 1); err != nil {
					t.Fatal(err)
				}
				js, _ := json.Marshal(kp)
				back := new(KernelSums)
				if err := json.Unmarshal(js, back); err != nil {
					t.Fatal(err)
				}
				if blocks[b] == nil {
					blocks[b] = back
				} else if err := blocks[b].Merge(back); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := Finish(sums, blocks[1]); err == nil {
			t.Error("one block finished without the others: no error")
		}
		if err := blocks[0].Merge(blocks[1]); err == nil {
			t.Error("merging two blocks: no error")
		}
		if _, err := ConcatKernelSums(blocks[:3]); err == nil {
			t.Error("three of four blocks joined: no error")
		}
		joined, err := ConcatKernelSums([]*KernelSums{blocks[3], blocks[1], blocks[0], blocks[2]})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Finish(sums, joined)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range got.Results {
			w := want.Results[i]
			if key(e) != key(w) || e.Error != "" || *e.Value != *w.Value || (e.SE != nil && *e.SE != *w.SE) {
				t.Errorf("%s: blocks %v (%s), unblocked %v", key(e), *e.Value, e.Error, *w.Value)
			}
		}
		if o.EvalPoints != AllPoints {
			continue
		}
		mem, err := Evaluate(ctx, s, Options{Bandwidth: 0.02, NoBandwidthCheck: true, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, Metrics: metrics, Bins: o.Bins, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range got.Results {
			w := mem.Results[i]
			if d := math.Abs(float64(*e.Value) - float64(*w.Value)); key(e) != key(w) || d > 1e-12*math.Max(1, math.Abs(float64(*w.Value))) {
				t.Errorf("%s = %v, in memory %s = %v", key(e), *e.Value, key(w), *w.Value)
			}
		}
	}
}

// ece_witness in a stream: with every row an evaluation point (one shard,
// so the points are in input order) it is Evaluate's ece_witness, p = 1
// and 2, weighted or not, to 1e-12, in blocks too; with 150 points of 800
// the interval holds the full-data value.
func TestStreamWitness(t *testing.T) {
	ctx := context.Background()
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 800)
	ws := s.Rows(0, 800)
	w := make([]float64, s.N)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range w {
		w[i] = float64(rng.IntN(3))
	}
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	for _, set := range []*data.Set{s, ws} {
		mem, err := Evaluate(ctx, set, Options{Metrics: MetricSet{"ece_witness"}, Seed: 4, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		// m = 150: the interval of each of 10 samples (seeds 4..13 of
		// the sample; the witness's own splits follow the points) holds
		// the full-data value in most of them. One sample's interval
		// misses it now and then: EXPERIMENTS.md section 7 measured the witness's
		// intervals about 25 % too narrow.
		holds := map[string]int{}
		for _, m := range []EvalPoints{AllPoints, 150, 150, 150, 150, 150, 150, 150, 150, 150, 150} {
			seed := uint64(4)
			if m == 150 {
				seed = uint64(4 + holds["draws"])
				holds["draws"]++
			}
			got, err := Stream(ctx, data.SetSource(set, 300), StreamOptions{Options: Options{Metrics: MetricSet{"ece_witness"}, Seed: seed}, EvalPoints: m})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Results) != 2 {
				t.Fatalf("%d results", len(got.Results))
			}
			for i, e := range got.Results {
				want := mem.Results[i]
				gv, wv := float64(*e.Value), float64(*want.Value)
				if key(e) != key(want) || e.Error != "" {
					t.Fatalf("%s (%s), in memory %s", key(e), e.Error, key(want))
				}
				if e.Seed == nil || want.Seed == nil || *e.Seed != seed || m == AllPoints && *e.Seed != *want.Seed {
					t.Errorf("%s: seed %v, in memory %v", key(e), e.Seed, want.Seed)
				}
				if m == AllPoints {
					if math.Abs(gv-wv) > 1e-12*math.Max(1e-3, math.Abs(wv)) || *e.Bandwidth != *want.Bandwidth || *e.Excluded != *want.Excluded || e.IntervalKind != "exact" {
						t.Errorf("weighted=%v %s = %.17g (h %v), in memory %.17g (h %v)", set.Weights != nil, key(e), gv, *e.Bandwidth, wv, *want.Bandwidth)
					}
					continue
				}
				if float64(e.Interval[0]) <= wv && wv <= float64(e.Interval[1]) {
					holds[key(e)]++
				} else {
					t.Logf("weighted=%v %s: m = 150, seed %d: %v [%v, %v] does not hold %v", set.Weights != nil, key(e), seed, gv, e.Interval[0], e.Interval[1], wv)
				}
			}
		}
		t.Logf("weighted=%v: of 10 samples of 150 points, the intervals that hold the full-data value: %v", set.Weights != nil, holds)
		for k, v := range holds {
			if k != "draws" && v < 6 {
				t.Errorf("weighted=%v %s: the interval of m = 150 points held the full-data value in %d of 10 samples", set.Weights != nil, k, v)
			}
		}
	}
}

// The canonical cells stay under StreamOptions.MaxCells: past it the
// canonical entries of ece_bin and mce are errors (the whole evaluation
// with Strict), the others equal the unbounded stream's; merging sums
// that overflowed overflows.
func TestStreamMaxCells(t *testing.T) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := StreamOptions{Options: Options{Metrics: MetricSet{"ece_bin", "mce", "brier"}}}
	want, err := Stream(ctx, data.SetSource(s, 2000), o)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxCells = 50
	got, err := Stream(ctx, data.SetSource(s, 2000), o)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Results {
		w := want.Results[i]
		if e.Notion == "canonical" {
			if e.Error == "" || !strings.Contains(e.Error, "more than 50 occupied canonical cells") || e.Value != nil {
				t.Errorf("%s: %+v", key(e), e)
			}
			continue
		}
		if key(e) != key(w) || *e.Value != *w.Value {
			t.Errorf("%s: %v, unbounded %v", key(e), *e.Value, *w.Value)
		}
	}
	o.Strict = true
	if _, err := Stream(ctx, data.SetSource(s, 2000), o); err == nil || !strings.Contains(err.Error(), "canonical cells") {
		t.Errorf("strict: %v", err)
	}
	if _, err := NewSums(StreamOptions{MaxCells: -1}); err == nil {
		t.Error("MaxCells -1: no error")
	}
	a, _ := metric.NewCellSums(s.K, 15)
	b, _ := metric.NewCellSums(s.K, 15)
	a.SetLimit(1000)
	b.SetLimit(1000)
	a.Add(s.Probs[:100*s.K], s.Labels[:100], nil)
	b.SetLimit(3)
	b.Add(s.Probs[:100*s.K], s.Labels[:100], nil)
	if !b.Overflowed() || a.Overflowed() || b.Occupied() != 0 || b.N() != 100 {
		t.Fatalf("overflow %v %v, %d cells, n %d", a.Overflowed(), b.Overflowed(), b.Occupied(), b.N())
	}
	if err := a.Merge(b); err != nil || !a.Overflowed() || a.N() != 200 {
		t.Errorf("merging an overflowed shard: %v, overflow %v, n %d", err, a.Overflowed(), a.N())
	}
}

// Second-pass JSON that names class edge sums it does not hold is
// refused (it made Merge panic), and so are mmce sums that are not whole
// (any JSON object was accepted); the same documents with the parts whole
// are read.
func TestKernelSumsJSONRefused(t *testing.T) {
	const mmce = `"width":0.2,"r":[0.5],"e":[0.5],"t":[0.1],"n":1,"total_w":1`
	for _, c := range []struct{ doc, want string }{
		{`{"version":2,"k":2,"top_edges":{"version":1,"keys":[],"limit":5,"values":[]},"class_edges":[null,null],"rows":1}`, "class edge"},
		{`{"version":2,"k":3,"top_edges":{"version":1,"keys":[],"limit":5,"values":[]},"class_edges":[],"rows":1}`, "class edge"},
		{`{"version":2,"k":2,"block":3,"blocks":2}`, "block 3 of 2"},
		{`{"version":1,"k":2}`, "version 1, older than this calib reads (2 to 2)"},
		{`{"version":2,"k":2,"points":[{"source":"a","row":0}],"mmce":{}}`, "metric.MMCESums: width 0"},
		{`{"version":2,"k":2,"points":[{"source":"a","row":0}],"mmce":{"width":0.2,"r":[0.5],"e":[0.5],"t":[],"n":1,"total_w":1}}`, "metric.MMCESums: 1 confidences, 1 residuals, 0 weights and 0 sums for 1 points"},
		{`{"version":2,"k":2,"points":[{"source":"a","row":0}],"mmce":{"width":0.2,"r":[1.5],"e":[0.5],"t":[0.1],"n":1,"total_w":1}}`, "metric.MMCESums: point 0"},
		{`{"version":2,"k":2,"points":[{"source":"a","row":0}],"mmce":{` + mmce + `,"w":[-1]}}`, "metric.MMCESums: point 0"},
		{`{"version":2,"k":2,"points":[],"mmce":{` + mmce + `}}`, "mmce sums of 1 points, not 0"},
	} {
		err := json.Unmarshal([]byte(c.doc), new(KernelSums))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.doc, err, c.want)
		}
	}
	for _, good := range []string{
		`{"version":2,"k":2,"top_edges":{"version":1,"keys":[],"limit":5,"values":[]},"class_edges":[{"version":1,"keys":[],"limit":5,"values":[]},{"version":1,"keys":[],"limit":5,"values":[]}],"rows":1}`,
		`{"version":2,"k":2,"points":[{"source":"a","row":0}],"mmce":{` + mmce + `}}`,
	} {
		if err := json.Unmarshal([]byte(good), new(KernelSums)); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	if err := json.Unmarshal([]byte(`{"version":2}`), new(Sums)); err == nil || !strings.Contains(err.Error(), "no config") {
		t.Errorf("Sums without a config: %v, want an error saying so", err)
	}
}

// A shard whose weights are all zero is part of a weighted stream (its rows
// count, with no weight); a stream whose weights are all zero is an error.
func TestStreamZeroWeightShard(t *testing.T) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	s = s.Rows(0, 1000)
	w := make([]float64, s.N)
	for i := range w {
		if i >= 400 {
			w[i] = 1 + float64(i%3)
		}
	}
	dir := t.TempDir()
	write := func(name string, i0, i1 int, w []float64) string {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := data.WriteParquet(f, s.Probs[i0*s.K:i1*s.K], s.K, s.Labels[i0:i1], w[i0:i1], data.ParquetWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return f.Name()
	}
	names := []string{write("a.parquet", 0, 400, w), write("b.parquet", 400, 1000, w)}
	ws := s.Rows(0, s.N)
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	o := Options{Metrics: MetricSet{"ece_bin", "brier", "accuracy"}}
	mem, err := Evaluate(context.Background(), ws, o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Stream(context.Background(), data.Files(names, data.Options{}, 300, nil), StreamOptions{Options: o})
	if err != nil {
		t.Fatal(err)
	}
	if got.N != 1000 || got.WeightSum != mem.WeightSum {
		t.Errorf("n %d, weight %v; in memory %v", got.N, got.WeightSum, mem.WeightSum)
	}
	// The default metrics too (smece's grids take a batch of zero
	// weights): every entry computed.
	def, err := Stream(context.Background(), data.Files(names, data.Options{}, 300, nil), StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range def.Results {
		if e.Error != "" {
			t.Errorf("defaults: %s: %s", key(e), e.Error)
		}
	}
	for i, e := range got.Results {
		if d := math.Abs(float64(*e.Value) - float64(*mem.Results[i].Value)); d > 1e-12 {
			t.Errorf("%s = %v, in memory %v", key(e), *e.Value, *mem.Results[i].Value)
		}
	}
	zero := make([]float64, s.N)
	names = []string{write("c.parquet", 0, 400, zero), write("d.parquet", 400, 1000, zero)}
	if _, err := Stream(context.Background(), data.Files(names, data.Options{}, 300, nil), StreamOptions{Options: o}); !errors.Is(err, data.ErrWeights) {
		t.Errorf("all weights zero: %v", err)
	}
}

// TestStreamHeadline: a stream's default metrics are the in-memory
// defaults, the headline first, with the same entries (notion, p, value
// within 1e-12; KS inside its streamed bounds), and on the real sets read
// as one file in batches (every fold's sample holds all its rows) the
// headline, the default's one ece_variational entry, is the in-memory
// one within 1e-12, interval included, as are the three canonical
// entries of ece_variational named.
func TestStreamHeadline(t *testing.T) {
	ctx := context.Background()
	for i, s := range realSets(t) {
		mem, err := Evaluate(ctx, s, Options{Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Stream(ctx, data.SetSource(s, 999), StreamOptions{Options: Options{Strict: true}})
		if err != nil {
			t.Fatal(err)
		}
		seen := MetricSet{}
		for _, e := range got.Results {
			if !seen.Has(e.Metric) {
				seen = append(seen, e.Metric)
			}
		}
		if want := slices.Clone(DefaultMetrics); !slices.Equal(slices.Sorted(slices.Values(seen)), slices.Sorted(slices.Values(want))) || seen[0] != Headline.Metric {
			t.Errorf("%s: streamed metrics %v, want %v", s.File, seen, want)
		}
		sameEntries(t, s.File+" streamed defaults", got, mem, true)
		if got.Headline == nil || *got.Headline != *mem.Headline {
			t.Errorf("%s: headline %+v, in memory %+v", s.File, got.Headline, mem.Headline)
		}
		// The default prints the headline alone; ece_variational named
		// adds the CE_2^2 and KL rows (the first set: the same fit).
		if n := sameVariational(t, s.File, got, mem); n != 1 {
			t.Errorf("%s: %d ece_variational entries streamed by default, want 1 (the headline)", s.File, n)
		}
		if i > 0 {
			continue
		}
		named := Options{Strict: true, Metrics: MetricSet{ECEVariational}}
		if mem, err = Evaluate(ctx, s, named); err != nil {
			t.Fatal(err)
		}
		if got, err = Stream(ctx, data.SetSource(s, 999), StreamOptions{Options: named}); err != nil {
			t.Fatal(err)
		}
		if n := sameVariational(t, s.File, got, mem); n != 3 {
			t.Errorf("%s: %d ece_variational entries streamed, want 3 (lp, brier, log)", s.File, n)
		}
	}
}

// sameVariational checks each streamed ece_variational entry against the
// in-memory one of the same key (value, interval and se within 1e-12, the
// family) and returns how many there were.
func sameVariational(t *testing.T, file string, got, mem *Evaluation) int {
	t.Helper()
	n := 0
	for _, e := range got.Results {
		if e.Metric != ECEVariational {
			continue
		}
		w := mem.Lookup(Key{Metric: ECEVariational, Notion: e.Notion, P: deref(e.P), Variant: e.Loss})
		if w == nil {
			t.Fatalf("%s: %s %s not in memory", file, e.Notion, e.Loss)
		}
		n++
		for i, pair := range [][2]float64{{float64(*e.Value), float64(*w.Value)}, {float64(e.Interval[0]), float64(w.Interval[0])},
			{float64(e.Interval[1]), float64(w.Interval[1])}, {float64(*e.SE), float64(*w.SE)}} {
			if math.Abs(pair[0]-pair[1]) > 1e-12*max(1, math.Abs(pair[1])) {
				t.Errorf("%s: %s loss, part %d: streamed %v, in memory %v", file, e.Loss, i, pair[0], pair[1])
			}
		}
		if e.Family != w.Family {
			t.Errorf("%s: %s loss: family %s, in memory %s", file, e.Loss, e.Family, w.Family)
		}
	}
	return n
}

// deref is *p, or 0 for nil.
func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestMergeNamesTheOptionsThatDiffer: sums of different options do not
// merge, and the error names each option that differs with both values,
// not the two whole configurations.
func TestMergeNamesTheOptionsThatDiffer(t *testing.T) {
	s := &data.Set{Probs: []float64{0.2, 0.8, 0.7, 0.3}, Labels: []int{1, 0}, N: 2, K: 2}
	var sums []*Sums
	for _, m := range []Metric{Brier, KS} {
		ss, err := NewSums(StreamOptions{Options: Options{Metrics: MetricSet{m}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := ss.Add(&data.Batch{Set: s, Source: string(m)}); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, ss)
	}
	err := sums[0].Merge(sums[1])
	if err == nil || !strings.Contains(err.Error(), `metrics ["brier"] and ["ks"]`) || strings.Contains(err.Error(), "grid") || len(err.Error()) > 300 {
		t.Errorf("merge of brier and ks sums: %v", err)
	}
}
