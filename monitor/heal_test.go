package monitor

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// failWrites makes the log's writes fail with ENOSPC while *on is set.
func failWrites(t *testing.T) (set func(bool)) {
	t.Helper()
	var mu sync.Mutex
	on := false
	testWrite = func([]byte) error {
		mu.Lock()
		defer mu.Unlock()
		if on {
			return syscall.ENOSPC
		}
		return nil
	}
	t.Cleanup(func() { testWrite = nil })
	return func(v bool) {
		mu.Lock()
		on = v
		mu.Unlock()
	}
}

// TestRefusalLeavesNothing: an observation refused by a failed write
// (a full disk) leaves no model, slice, request id or waiting prediction
// behind, across a snapshot and a restart: the model's real first
// observation, of another K, is then taken.
func TestRefusalLeavesNothing(t *testing.T) {
	full := failWrites(t)
	dir := t.TempDir()
	st, err := Open(dir, StoreOptions{SnapshotEvery: -1, Monitor: Options{MaxModels: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k3 := &Record{Kind: Observe, Model: "m", RequestID: "q", K: 3, Probs: []float64{0.2, 0.3, 0.5, 0.2, 0.3, 0.5}, Labels: []int{1, NoLabel}, IDs: []string{"", "p"}}
	full(true)
	_, err = st.Submit(ctx, k3)
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a failed write: %v", err)
	}
	if got := st.Monitor().Models(); len(got) != 0 {
		t.Fatalf("a refused observation left models %v", got)
	}
	full(false)
	// A slice refused on a model that exists.
	if _, err := st.Submit(ctx, &Record{Kind: Observe, Model: "m", K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{1}}); err != nil {
		t.Fatal(err)
	}
	full(true)
	if _, err := st.Submit(ctx, &Record{Kind: Observe, Model: "m", Slice: "s2", K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{1}}); err == nil {
		t.Fatal("no write error")
	}
	full(false)
	if err := st.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, StoreOptions{SnapshotEvery: -1, Monitor: Options{MaxModels: 1, MaxSlices: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	rep, err := re.Monitor().Report("m", Query{})
	if err != nil || len(rep.Slices) != 1 || rep.K != 2 {
		t.Fatalf("after the restart: %+v %v, want model m of K = 2 with one slice", rep, err)
	}
	// The request id and the prediction id of the refused record are
	// free: the record counts when sent again (with m's K).
	k2 := &Record{Kind: Observe, Model: "m", RequestID: "q", K: 2, Probs: []float64{0.4, 0.6, 0.4, 0.6}, Labels: []int{1, NoLabel}, IDs: []string{"", "p"}}
	if got, err := re.Submit(ctx, k2); err != nil || got.Duplicate || got.Counted != 1 || got.Pending != 1 {
		t.Fatalf("the refused record sent again: %+v %v", got, err)
	}
}

// TestFullDiskHeals: after writes fail, the store is unhealthy and
// counts the failures; once the disk takes writes again the next record
// is acknowledged without a restart, and a restart replays exactly the
// acknowledged records, with consecutive LSNs.
func TestFullDiskHeals(t *testing.T) {
	full := failWrites(t)
	dir := t.TempDir()
	st, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recs := smallRecords(30)
	var acked []int
	for i, r := range recs {
		full(i >= 10 && i < 20)
		_, err := st.Submit(ctx, r)
		switch {
		case i >= 10 && i < 20:
			if err == nil {
				t.Fatalf("record %d acknowledged on a full disk", i)
			}
			if st.Healthy() == nil {
				t.Fatalf("healthy while writes fail")
			}
		case err != nil:
			t.Fatalf("record %d after the disk was freed: %v", i, err)
		default:
			acked = append(acked, i)
			if st.Healthy() != nil {
				t.Fatalf("unhealthy after a write succeeded: %v", st.Healthy())
			}
		}
	}
	if got := st.FailedWrites(); got != 10 {
		t.Fatalf("%d failed writes counted, want 10", got)
	}
	if got := st.Monitor().LSN(); got != 20 {
		t.Fatalf("LSN %d after 20 records written, want 20 (no gap)", got)
	}
	want := reportJSON(t, st.Monitor())
	kill(st)
	re, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if got := reportJSON(t, re.Monitor()); !bytes.Equal(got, want) {
		t.Fatal("the replayed state differs from the acknowledged one")
	}
	rep, _ := re.Monitor().Report("m", Query{})
	if rep.Slices[0].Observed != int64(len(acked)) {
		t.Fatalf("%d rows replayed, %d acknowledged", rep.Slices[0].Observed, len(acked))
	}
}

// TestProbeHeals: with no record coming, the store's probe of the disk
// makes it healthy again once writes succeed.
func TestProbeHeals(t *testing.T) {
	full := failWrites(t)
	st, err := Open(t.TempDir(), StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	full(true)
	st.Submit(context.Background(), smallRecords(1)[0])
	if st.Healthy() == nil {
		t.Fatal("healthy after a failed write")
	}
	full(false) // the probe writes a file of its own, which testWrite does not fail
	for i := 0; st.Healthy() != nil; i++ {
		if i > 100 {
			t.Fatal("no probe made the store healthy in 10 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRequestIDsPerModel: one request id sent to two models is two
// requests; sent twice to one, the second is a duplicate.
func TestRequestIDsPerModel(t *testing.T) {
	st, err := Open(t.TempDir(), StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	obs := func(model string) *Record {
		return &Record{Kind: Observe, Model: model, RequestID: "same", K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{1}}
	}
	for _, c := range []struct {
		model string
		dup   bool
	}{{"m1", false}, {"m2", false}, {"m1", true}, {"m2", true}} {
		got, err := st.Submit(context.Background(), obs(c.model))
		if err != nil || got.Duplicate != c.dup {
			t.Fatalf("model %s: %+v %v, want duplicate %v", c.model, got, err, c.dup)
		}
	}
}

// TestMaxClasses: a model's first observation past MaxClasses is
// refused, naming the bound and its flag.
func TestMaxClasses(t *testing.T) {
	m, _ := New(Options{MaxClasses: 4})
	p := []float64{0.2, 0.2, 0.2, 0.2, 0.2}
	if err := m.Check(&Record{Kind: Observe, Model: "m", K: 5, Probs: p, Labels: []int{1}}); err == nil || !strings.Contains(err.Error(), "--max-classes") {
		t.Fatalf("K = 5 past 4: %v", err)
	}
}

// TestReportStallsNothing: while a report's evaluations are being
// finished (held in the middle by a hook), observations of another model
// and of the reported slice itself are applied; the report then holds the
// numbers of the rows before it (a consistent copy), and a second report
// the new rows.
func TestReportStallsNothing(t *testing.T) {
	st, err := Open(t.TempDir(), StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recs := smallRecords(50)
	submitAll(t, st, recs)
	before := reportJSON(t, st.Monitor())
	hold, release := make(chan struct{}), make(chan struct{})
	testEvaluation = func() {
		select {
		case hold <- struct{}{}:
			<-release
		default:
		}
	}
	defer func() { testEvaluation = nil }()
	got := make(chan []byte)
	go func() { got <- reportJSON(t, st.Monitor()) }()
	<-hold // the report is finishing, outside the lock
	done := make(chan error)
	go func() {
		_, err := st.Submit(ctx, &Record{Kind: Observe, Model: "other", K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{1}})
		if err == nil {
			_, err = st.Submit(ctx, &Record{Kind: Observe, Model: "m", Time: recs[49].Time, K: 3, Probs: []float64{0.1, 0.1, 0.8}, Labels: []int{0}})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("observations waited for a report")
	}
	close(release)
	if b := <-got; !bytes.Equal(b, before) {
		t.Fatal("the report held during observations changed: it does not read a consistent copy")
	}
	if after := reportJSON(t, st.Monitor()); bytes.Equal(after, before) {
		t.Fatal("the next report misses the new row")
	}
}
