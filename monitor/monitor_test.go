package monitor

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/goldenjson"
)

// realSet loads the CIFAR-10 test logits of the repository's testdata.
func realSet(t testing.TB) *data.Set {
	t.Helper()
	dir := filepath.Join("..", "testdata", "logits", "cifar10_densenet121-flsd53")
	s, err := data.Load(filepath.Join(dir, "test_logits.npy"), data.Options{Logits: true, Labels: filepath.Join(dir, "test_labels.npy")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// records cuts the rows [lo, hi) of s into observation records of at
// most batch rows; every third row of a record comes without a label (id
// "p<row>") and an outcome record joins it after the next record.
func records(s *data.Set, lo, hi, batch int, t0 int64) []*Record {
	var out []*Record
	var late *Record
	for i := lo; i < hi; i += batch {
		j := min(hi, i+batch)
		r := &Record{Kind: Observe, Model: "m", Time: t0 + int64(i)*int64(time.Second), K: s.K, Probs: s.Probs[i*s.K : j*s.K], Labels: make([]int, j-i), IDs: make([]string, j-i)}
		var o *Record
		for k := i; k < j; k++ {
			r.Labels[k-i] = s.Labels[k]
			if k%3 == 0 {
				r.Labels[k-i] = NoLabel
				r.IDs[k-i] = "p" + strconv.Itoa(k)
				if o == nil {
					o = &Record{Kind: Outcome, Model: "m", Time: r.Time}
				}
				o.IDs = append(o.IDs, r.IDs[k-i])
				o.Labels = append(o.Labels, s.Labels[k])
			}
		}
		out = append(out, r)
		if late != nil {
			late.Time = r.Time
			out = append(out, late)
		}
		late = o
	}
	if late != nil {
		out = append(out, late)
	}
	return out
}

// evalJSON returns evaluate's document for the rows of s (in memory),
// decoded by goldenjson.
func evalJSON(t testing.TB, s *data.Set, o Options) any {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	sums, err := evaluate.NewSums(o.Eval)
	if err != nil {
		t.Fatal(err)
	}
	set := &data.Set{N: s.N, K: s.K, Probs: s.Probs, Labels: s.Labels}
	if err := sums.Add(&data.Batch{Set: set, Source: "x"}); err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Finish(sums, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := evaluate.WriteJSON(&buf, ev); err != nil {
		t.Fatal(err)
	}
	v, err := goldenjson.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMonitorEqualsEvaluate(t *testing.T) {
	s := realSet(t)
	m, err := New(Options{Window: 1000 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var lsn uint64
	for _, r := range records(s, 0, s.N, 257, t0) {
		if err := m.Check(r); err != nil {
			t.Fatal(err)
		}
		lsn++
		m.Apply(lsn, r)
	}
	rep, err := m.Report("m", Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Slices) != 1 || rep.Slices[0].Counted != int64(s.N) {
		t.Fatalf("report: %+v", rep.Slices)
	}
	goldenjson.RequireWithin(t, "total", evalJSON(t, s, Options{}), rep.Slices[0].Total, 1e-12)
}

// TestWindowsRetire: with one-second windows kept ten seconds, the
// windows past retention are merged into the slice's retired rows: the
// total is still every row's evaluation, at most 11 windows are kept,
// and a snapshot restores the same report bit for bit.
func TestWindowsRetire(t *testing.T) {
	s := realSet(t)
	m, err := New(Options{Window: time.Second, Retain: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var lsn uint64
	for _, r := range records(s, 0, s.N, 50, t0) {
		r.Time = t0 + int64(lsn)*int64(time.Second)/3
		if err := m.Check(r); err != nil {
			t.Fatal(err)
		}
		lsn++
		m.Apply(lsn, r)
	}
	rep, err := m.Report("m", Query{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.Slices[0].Windows); n == 0 || n > 11 {
		t.Fatalf("%d windows kept", n)
	}
	goldenjson.RequireWithin(t, "total", evalJSON(t, s, Options{}), rep.Slices[0].Total, 1e-12)
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	re, _ := New(Options{Window: time.Second, Retain: 10 * time.Second})
	if _, err := re.Restore(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reportJSON(t, m), reportJSON(t, re)) {
		t.Fatal("the restored report differs")
	}
}

// TestAlarmFires: on rows whose labels follow the probabilities at
// temperature 1/3 (an underconfident model), both alarm layers fire once
// (OnAlarm), the report and a restored snapshot show them, and a Reset
// record starts them again.
func TestAlarmFires(t *testing.T) {
	s := realSet(t)
	var fired []Fired
	o := Options{Alarm: alarm.Options{ClassWise: true}, OnAlarm: func(f Fired) { fired = append(fired, f) }}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	labels := make([]int, s.N)
	for i := range labels {
		// Labels from the top class with probability c^(1/3) > c.
		p := s.Probs[i*s.K : (i+1)*s.K]
		j := 0
		for c := range p {
			if p[c] > p[j] {
				j = c
			}
		}
		labels[i] = (j + 1 + rng.IntN(s.K-1)) % s.K
		if rng.Float64() < math.Cbrt(p[j]) {
			labels[i] = j
		}
	}
	r := &Record{Kind: Observe, Model: "m", Time: 1, K: s.K, Probs: s.Probs, Labels: labels}
	if err := m.Check(r); err != nil {
		t.Fatal(err)
	}
	m.Apply(1, r)
	if len(fired) != 2 || fired[0].Layer != "test" && fired[1].Layer != "test" {
		t.Fatalf("fired: %+v", fired)
	}
	rep, _ := m.Report("m", Query{})
	a := rep.Slices[0].Alarm
	if !a.TestAlarm || !a.ChangeAlarm || a.Test < a.TestThreshold || a.Rows != int64(s.N) {
		t.Fatalf("alarm report: %+v", a)
	}
	b, _ := m.MarshalJSON()
	re, _ := New(o)
	if _, err := re.Restore(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reportJSON(t, m), reportJSON(t, re)) {
		t.Fatal("the restored report differs")
	}
	reset := &Record{Kind: Reset, Model: "m", Time: 2}
	if err := m.Check(reset); err != nil {
		t.Fatal(err)
	}
	m.Apply(2, reset)
	rep, _ = m.Report("m", Query{})
	if a := rep.Slices[0].Alarm; a.TestAlarm || a.ChangeAlarm || a.Rows != 0 || a.Test != 0 {
		t.Fatalf("after a reset: %+v", a)
	}
	t.Logf("underconfident CIFAR-10 rows: test log-evidence %.1f (threshold %.1f), change %.1f (threshold %.1f)", a.Test, a.TestThreshold, a.Change, a.ChangeThreshold)
}
