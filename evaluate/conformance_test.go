package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// TestConformance runs one check for every metric of the table that has a
// streamed part (as go-containerregistry's validate.Image runs for every
// image implementation), on every golden set of testdata/golden/ecekde, a
// weighted copy of one and a one-column set (the binary notion):
//
//   - in memory = streamed: Evaluate and Stream with every row an
//     evaluation point (one shard: the witness's cross-fitting splits
//     follow the points' order) give the same entries, in the same order,
//     with the same definition keys, each value within 1e-12 relative (KS:
//     the in-memory value inside the streamed bounds, at most 2e-3 wide);
//   - any merge order: the state of three shards, merged in two orders,
//     gives the same entries within 1e-12 (the sums add in another order),
//     and, but for ece_witness (whose points come in another order from
//     three shards, so its splits differ) and ece_variational (whose
//     rows' folds hash their place: another shard, another fold),
//     Evaluate's;
//   - a JSON round trip is exact: Finish of the merged states after each
//     state went through its JSON form writes the same document, byte for
//     byte, as Finish of the states themselves.
//
// ece_kde and sharpness are checked at a fixed bandwidth (the stream
// chooses on its own grid), ece_kde on canonical, marginal and top_label.
func TestConformance(t *testing.T) {
	files, err := filepath.Glob("../testdata/golden/ecekde/*.csv")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden sets: %v, %v", files, err)
	}
	var sets []*data.Set
	for _, f := range files {
		s, err := data.Load(f, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, s)
	}
	ws := sets[len(sets)-1].Rows(0, sets[len(sets)-1].N)
	rng := rand.New(rand.NewPCG(5, 5))
	w := make([]float64, ws.N)
	for i := range w {
		w[i] = float64(rng.IntN(4)) / 2 // zero weights too
	}
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	ws.File += " (weighted)"
	sets = append(sets, ws)
	// A one-column set (p1 of the first K = 2 golden set): the binary notion.
	for _, s := range sets {
		if s.K != 2 || s.Binary {
			continue
		}
		p1 := make([]float64, s.N)
		for i := range p1 {
			p1[i] = s.Probs[2*i+1]
		}
		bs, err := data.New(p1, 1, s.Labels, false, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		bs.File = s.File + " (one column)"
		sets = append(sets, bs)
		break
	}
	if !sets[len(sets)-1].Binary {
		t.Fatal("no one-column set")
	}
	checked := 0
	for _, d := range metricTable {
		if d.finish == nil {
			continue
		}
		checked++
		for _, s := range sets {
			t.Run(fmt.Sprintf("%s/%s", d.name, filepath.Base(s.File)), func(t *testing.T) {
				checkConformance(t, d.name, s)
			})
		}
	}
	if checked < 14 {
		t.Errorf("%d streamed metrics checked, want all 14", checked)
	}
}

// checkConformance is TestConformance's check of metric m on the set s.
func checkConformance(t *testing.T, m Metric, s *data.Set) {
	ctx := context.Background()
	o := Options{Metrics: MetricSet{m}, Strict: true, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.ClassWise, kde.TopLabel}}, Bandwidth: 0.05, NoBandwidthCheck: true, Seed: 7, Workers: 2}
	if s.Binary {
		o.Mode = NotionSet{Notions: []kde.Notion{kde.Binary, kde.TopLabel}}
	}
	if m == ECEVariational {
		o.Mode = NotionSet{Notions: []kde.Notion{kde.Canonical}} // a stream's entries
	}
	mem, err := Evaluate(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	so := StreamOptions{Options: o, EvalPoints: AllPoints}
	so.NoBandwidthCheck = false // not a stream's option
	one, err := Stream(ctx, data.SetSource(s, 37), so)
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "streamed", one, mem, true)

	parts := split(s, 3)
	var docs [][]byte
	for _, order := range [][]int{{0, 1, 2}, {2, 0, 1}} {
		var plain, trip []byte
		for _, roundTrip := range []bool{false, true} {
			ev := mergedStates(t, so, s.File, parts, order, roundTrip)
			if !roundTrip {
				sameEntries(t, fmt.Sprintf("merged in order %v", order), ev, mem, m != ECEWitness && m != ECEVariational)
			}
			ev.ZeroTimes()
			var b bytes.Buffer
			if err := WriteJSON(&b, ev); err != nil {
				t.Fatal(err)
			}
			if roundTrip {
				trip = b.Bytes()
			} else {
				plain = b.Bytes()
			}
		}
		if !bytes.Equal(plain, trip) {
			t.Errorf("order %v: the states through JSON give another document:\n%s\nwithout:\n%s", order, trip, plain)
		}
		docs = append(docs, plain)
	}
	var a, b Evaluation
	if json.Unmarshal(docs[0], &a) != nil || json.Unmarshal(docs[1], &b) != nil {
		t.Fatal("documents do not decode")
	}
	sameEntries(t, "the other merge order", &b, &a, true)
}

// mergedStates evaluates the parts of a set (rows of source, in order)
// through the two passes' states: a Sums per part merged in order, then a
// KernelSums per part merged in order, each through its JSON form when
// roundTrip.
func mergedStates(t *testing.T, so StreamOptions, source string, parts []*data.Set, order []int, roundTrip bool) *Evaluation {
	t.Helper()
	through := func(v, back any) any {
		if !roundTrip {
			return v
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		return back
	}
	offset := func(i int) int64 {
		off := 0
		for _, p := range parts[:i] {
			off += p.N
		}
		return int64(off)
	}
	total, err := NewSums(so)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range order {
		sp, _ := NewSums(so)
		if err := sp.Add(&data.Batch{Set: parts[i], Source: source, Offset: offset(i)}); err != nil {
			t.Fatal(err)
		}
		if err := total.Merge(through(sp, new(Sums)).(*Sums)); err != nil {
			t.Fatal(err)
		}
	}
	total = through(total, new(Sums)).(*Sums)
	ks, err := total.KernelSums()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range order {
		if ks == nil {
			break
		}
		kp, _ := total.KernelSums()
		if err := kp.Add(context.Background(), &data.Batch{Set: parts[i], Source: source, Offset: offset(i)}, 1); err != nil {
			t.Fatal(err)
		}
		if err := ks.Merge(through(kp, new(KernelSums)).(*KernelSums)); err != nil {
			t.Fatal(err)
		}
	}
	if ks != nil {
		ks = through(ks, new(KernelSums)).(*KernelSums)
	}
	ev, err := Finish(total, ks)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// sameEntries checks that got has want's entries in want's order, with
// the same definition keys, each value within 1e-12 relative; a KS entry
// of got (a streamed one: bounds) must hold want's value within bounds at
// most 2e-3 wide. values false checks the entries and keys only.
func sameEntries(t *testing.T, what string, got, want *Evaluation, values bool) {
	t.Helper()
	if len(got.Results) != len(want.Results) {
		t.Fatalf("%s: %d entries, want %d", what, len(got.Results), len(want.Results))
	}
	for i, e := range got.Results {
		w := want.Results[i]
		switch {
		case e.Key() != w.Key():
			t.Errorf("%s: entry %d is %+v, want %+v", what, i, e.Key(), w.Key())
			continue
		case e.Error != "" || w.Error != "":
			t.Errorf("%s: %+v: errors %q, %q", what, e.Key(), e.Error, w.Error)
			continue
		case e.Estimator != w.Estimator || e.Kernel != w.Kernel || e.BinRule != w.BinRule || e.BinEdges != w.BinEdges || e.Weighted != w.Weighted ||
			(e.Bandwidth == nil) != (w.Bandwidth == nil) || (e.PerClass == nil) != (w.PerClass == nil):
			t.Errorf("%s: %+v: definition keys differ:\n%+v\n%+v", what, e.Key(), e, w)
		}
		if e.Bandwidth != nil && w.Bandwidth != nil && *e.Bandwidth != *w.Bandwidth ||
			e.Bins != nil && w.Bins != nil && *e.Bins != *w.Bins ||
			e.Excluded != nil && w.Excluded != nil && *e.Excluded != *w.Excluded {
			t.Errorf("%s: %+v: bandwidth, bins or excluded differ:\n%+v\n%+v", what, e.Key(), e, w)
		}
		if !values {
			continue
		}
		gv, wv := float64(*e.Value), float64(*w.Value)
		if e.IntervalKind == "bound" && e.Metric == KS {
			lo, hi := float64(e.Interval[0]), float64(e.Interval[1])
			if w.IntervalKind != "bound" && (!(lo <= wv+1e-12 && wv <= hi+1e-12) || hi-lo > 2e-3) {
				t.Errorf("%s: %+v: %v outside the bounds [%v, %v]", what, e.Key(), wv, lo, hi)
			}
			if w.IntervalKind != "bound" {
				continue
			}
		}
		if math.Abs(gv-wv) > 1e-12*math.Max(1e-3, math.Abs(wv)) {
			t.Errorf("%s: %+v = %.17g, want %.17g", what, e.Key(), gv, wv)
		}
	}
}
