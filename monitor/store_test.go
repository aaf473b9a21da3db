package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// submitAll submits the records, failing the test on an error.
func submitAll(t testing.TB, st *Store, recs []*Record) {
	t.Helper()
	for _, r := range recs {
		if _, err := st.Submit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// reportJSON returns the report of model "m" as JSON.
func reportJSON(t testing.TB, m *Monitor) []byte {
	t.Helper()
	rep, err := m.Report("m", Query{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStoreReplay: a store abandoned without Close (its process killed)
// and one closed (snapshotted) reopen to the state of the monitor that
// applied the same records in memory, bit for bit; a state directory
// written with other options is refused, naming them.
func TestStoreReplay(t *testing.T) {
	s := realSet(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	recs := records(s, 0, 3000, 100, t0)
	mem, _ := New(Options{})
	for i, r := range recs {
		if err := mem.Check(r); err != nil {
			t.Fatal(err)
		}
		mem.Apply(uint64(i+1), r)
	}
	want := reportJSON(t, mem)
	for _, closeIt := range []bool{false, true} {
		dir := t.TempDir()
		st, err := Open(dir, StoreOptions{SnapshotEvery: -1, SegmentBytes: 50_000})
		if err != nil {
			t.Fatal(err)
		}
		submitAll(t, st, recs[:len(recs)/2])
		if err := st.Snapshot(); err != nil {
			t.Fatal(err)
		}
		submitAll(t, st, recs[len(recs)/2:])
		if closeIt {
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			// A second process on the directory is refused while the
			// first holds it.
			if _, err := Open(dir, StoreOptions{}); err == nil || !strings.Contains(err.Error(), "in use") {
				t.Fatalf("a second Open of a directory in use: %v", err)
			}
			st.lock.Close() // as the kernel does when the process dies
		}
		re, err := Open(dir, StoreOptions{SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := reportJSON(t, re.Monitor()); !bytes.Equal(got, want) {
			t.Fatalf("close %v: the reopened store's report differs", closeIt)
		}
		if re.Monitor().LSN() != uint64(len(recs)) {
			t.Fatalf("close %v: LSN %d, want %d", closeIt, re.Monitor().LSN(), len(recs))
		}
		// Record ids are remembered across the restart.
		r := *recs[0]
		r.RequestID = "again"
		if out, err := re.Submit(context.Background(), &r); err != nil || out.Duplicate {
			t.Fatalf("%+v %v", out, err)
		}
		if out, err := re.Submit(context.Background(), &r); err != nil || !out.Duplicate {
			t.Fatalf("a repeated request id: %+v %v", out, err)
		}
		re.Close()
	}
	dir := t.TempDir()
	st, _ := Open(dir, StoreOptions{})
	submitAll(t, st, recs[:2])
	st.Close()
	_, err := Open(dir, StoreOptions{Monitor: Options{Window: time.Minute}})
	if err == nil || !strings.Contains(err.Error(), "window: 1h0m0s in the state, 1m0s now (--window)") {
		t.Fatalf("a state of other options: %v", err)
	}
}

// TestStoreTornTail: a record cut short at the end of the last segment
// (a write the process did not finish) is dropped and the rest replayed;
// a damaged record in an earlier segment is an error naming the file.
func TestStoreTornTail(t *testing.T) {
	s := realSet(t)
	recs := records(s, 0, 1000, 100, time.Now().UnixNano())
	dir := t.TempDir()
	st, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	submitAll(t, st, recs)
	st.lock.Close() // the process dies
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	b, _ := os.ReadFile(segs[0])
	// Cut the last record in its middle.
	os.WriteFile(segs[0], b[:len(b)-50], 0o644)
	re, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := re.Monitor().LSN(); got != uint64(len(recs)-1) {
		t.Fatalf("LSN %d after a torn tail, want %d", got, len(recs)-1)
	}
	// New records follow in a new segment; the torn one is truncated.
	submitAll(t, re, recs[len(recs)-1:])
	re.lock.Close()
	// Damage a byte in the middle of the first (now not last) segment.
	b, _ = os.ReadFile(segs[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(segs[0], b, 0o644)
	_, err = Open(dir, StoreOptions{SnapshotEvery: -1})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(segs[0])) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged record: %v", err)
	}
}

// TestCheckRefuses: what Check refuses, naming the field and row.
func TestCheckRefuses(t *testing.T) {
	m, _ := New(Options{MaxSlices: 1})
	if err := m.Check(&Record{Kind: Observe, Model: "w", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}, Weights: []float64{1e308}}); err == nil || !strings.Contains(err.Error(), "weights: row 1") {
		t.Errorf("a weight of 1e308: %v", err)
	}
	ok := &Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}, Time: 1}
	if err := m.Check(ok); err != nil {
		t.Fatal(err)
	}
	m.Apply(1, ok)
	for _, c := range []struct {
		r    Record
		want string
	}{
		{Record{Kind: Observe, Model: "m", K: 3, Probs: []float64{0.3, 0.3, 0.4}, Labels: []int{1}}, "K = 2"},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.6}, Labels: []int{1}}, "probs: row 1: the row sums"},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{2}}, "labels: row 1: label 2 out of range"},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{NoLabel}}, "ids: row 1: a prediction without a label needs an id"},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}, Weights: []float64{1}}, "weights"},
		{Record{Kind: Observe, Model: "m", Slice: "other", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}}, "at most 1 (--max-slices)"},
		{Record{Kind: Observe, Model: "bad name", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}}, "model"},
		{Record{Kind: Outcome, Model: "m", IDs: []string{"x"}, Labels: []int{1}}, `ids: row 1: prediction id "x" is not waiting`},
		{Record{Kind: Outcome, Model: "n", IDs: []string{"x"}, Labels: []int{1}}, `"n" has no observations`},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7, 0.3, 0.7}, Labels: []int{NoLabel, NoLabel}, IDs: []string{"d", "d"}}, `ids: row 2: prediction id "d" is row 1's too`},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{NoLabel}, IDs: []string{strings.Repeat("x", 300)}}, "ids: row 1: 300 bytes: at most 256"},
		{Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.3, 0.7}, Labels: []int{1}, RequestID: strings.Repeat("x", 300)}, "request_id: 300 bytes"},
	} {
		err := m.Check(&c.r)
		var ce *CheckError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a CheckError with %q", c.r, err, c.want)
		}
	}
}

// FuzzDecodeRecord: any bytes decode to a checked record or an error,
// never a panic, allocating at most 64 MiB; a record decoded encodes to
// the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range []*Record{
		{Kind: Observe, Model: "m", Slice: "s", RequestID: "r", Time: 5, K: 2, Probs: []float64{0.2, 0.8}, Labels: []int{1}, Weights: []float64{2}, IDs: []string{"a"}, Times: []int64{4}},
		{Kind: Outcome, Model: "m", K: 3, Labels: []int{2, 0}, IDs: []string{"a", "b"}},
	} {
		b, err := r.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// What is allocated is sized by the bytes read: at most 64 MiB
		// for the fuzzer's inputs of a few KiB.
		debug.SetMemoryLimit(64 << 20)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := DecodeRecord(b)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
			t.Fatalf("%d MiB allocated for %d bytes", got>>20, len(b))
		}
		if err != nil {
			return
		}
		again, err := r.AppendBinary(nil)
		if err != nil {
			t.Fatalf("a decoded record does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			// Varints have one shortest form; a longer one decodes too.
			if r2, err := DecodeRecord(again); err != nil || r2.Rows() != r.Rows() {
				t.Fatalf("re-encoded record differs: %v", err)
			}
		}
	})
}

// TestStoreDamageInLastSegment: a damaged record followed by others in
// the last segment is an error, not a torn tail to cut.
func TestStoreDamageInLastSegment(t *testing.T) {
	s := realSet(t)
	dir := t.TempDir()
	st, _ := Open(dir, StoreOptions{SnapshotEvery: -1})
	submitAll(t, st, records(s, 0, 1000, 100, time.Now().UnixNano()))
	st.lock.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	b, _ := os.ReadFile(segs[0])
	b[len(b)/3] ^= 0xff
	os.WriteFile(segs[0], b, 0o644)
	if _, err := Open(dir, StoreOptions{SnapshotEvery: -1}); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a damaged record before others: %v", err)
	}
}

// TestPendingReuse: a prediction id joined by its outcome can wait again
// (the queue's old entry is skipped), the state snapshots and reopens,
// and ids of two models do not collide.
func TestPendingReuse(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, StoreOptions{SnapshotEvery: -1, Monitor: Options{MaxPending: 2}})
	if err != nil {
		t.Fatal(err)
	}
	obs := func(model, id string) *Record {
		return &Record{Kind: Observe, Model: model, K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{NoLabel}, IDs: []string{id}}
	}
	out := func(model, id string) *Record {
		return &Record{Kind: Outcome, Model: model, IDs: []string{id}, Labels: []int{1}}
	}
	submitAll(t, st, []*Record{obs("m", "x"), obs("m", "a"), out("m", "a"), obs("m", "a"), obs("n", "a")})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, StoreOptions{SnapshotEvery: -1, Monitor: Options{MaxPending: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	// MaxPending 2 kept the newest two: m/a and n/a, not m/x.
	if got, err := re.Submit(context.Background(), out("m", "a")); err != nil || got.Counted != 1 {
		t.Fatalf("outcome m/a: %+v %v", got, err)
	}
	if got, err := re.Submit(context.Background(), out("n", "a")); err != nil || got.Counted != 1 {
		t.Fatalf("outcome n/a: %+v %v", got, err)
	}
	if _, err := re.Submit(context.Background(), out("m", "x")); err == nil {
		t.Fatal("m/x should have expired past MaxPending")
	}
}
