package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/metric"
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

// TestRestartWithOtherAlarm: a state reopened with other alarm options
// starts every alarm again, with a warning naming the option, and keeps
// every count; other pinned options are refused one line each.
func TestRestartWithOtherAlarm(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	submitAll(t, st, smallRecords(40))
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	o := StoreOptions{SnapshotEvery: -1, Logger: slog.New(slog.NewTextHandler(&logged, nil)), Monitor: Options{Alarm: alarm.Options{Alpha: 0.05}}}
	re, err := Open(dir, o)
	if err != nil {
		t.Fatalf("other alarm options: %v", err)
	}
	rep, _ := re.Monitor().Report("m", Query{})
	if rep.Slices[0].Counted != 40 || rep.Slices[0].Alarm.Rows != 0 {
		t.Errorf("counted %d, alarm rows %d: want 40 and a new alarm", rep.Slices[0].Counted, rep.Slices[0].Alarm.Rows)
	}
	if !strings.Contains(logged.String(), "every alarm starts again") || !strings.Contains(logged.String(), "alarm alpha: 0.01 in the state, 0.05 now (--alarm-alpha)") {
		t.Errorf("the warning: %s", logged.String())
	}
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, StoreOptions{SnapshotEvery: -1, Monitor: Options{Window: time.Minute, Eval: evaluate.StreamOptions{Options: evaluate.Options{Bins: metric.BinOptions{Bins: 10}}}, Alarm: alarm.Options{Alpha: 0.05}}})
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Diffs) != 3 {
		t.Fatalf("other window and bins: %v, want 3 lines (window, bins, the bins' options)", err)
	}
}

// TestConcurrentReports: reports of one model run at once, beside
// observations of it, each of one moment: its total's rows are its count
// (run with -race: the shared sums are only read).
func TestConcurrentReports(t *testing.T) {
	st, err := Open(t.TempDir(), StoreOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs := smallRecords(40)
	submitAll(t, st, recs[:20])
	var wg sync.WaitGroup
	out := make([][]byte, 4)
	counted := make([]int64, 4)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := st.Monitor().Report("m", Query{})
			if err != nil {
				t.Error(err)
				return
			}
			out[i], _ = json.Marshal(rep.Slices[0].Total)
			counted[i] = rep.Slices[0].Counted
		}()
	}
	submitAll(t, st, recs[20:])
	wg.Wait()
	for i := range out {
		var n struct{ N int64 }
		// The total and the counts are of one moment.
		if err := json.Unmarshal(out[i], &n); err != nil || n.N < 20 || n.N > 40 || n.N != counted[i] {
			t.Errorf("report %d: n = %d (%v), counted %d: want one of 20 to 40, the same", i, n.N, err, counted[i])
		}
	}
}

// TestInFlightRetry: a record sent again with the request id of one
// still being written is refused with ErrInFlight, not called a
// duplicate; once the first is refused by a failed write, the retry is
// taken.
func TestInFlightRetry(t *testing.T) {
	m, _ := New(Options{})
	r := func() *Record {
		return &Record{Kind: Observe, Model: "m", RequestID: "q", K: 2, Probs: []float64{0.4, 0.6}, Labels: []int{1}}
	}
	first := r()
	if err := m.Check(first); err != nil {
		t.Fatal(err)
	}
	if err := m.Check(r()); !errors.Is(err, ErrInFlight) {
		t.Fatalf("a retry in flight: %v, want ErrInFlight", err)
	}
	m.Release(first) // the first's write failed
	if err := m.Check(r()); err != nil {
		t.Fatalf("the retry after the first was refused: %v", err)
	}
}

// TestMaxClassesKnownModel: a model of the state with more classes than
// MaxClasses (a state written under a larger bound) is still observed.
func TestMaxClassesKnownModel(t *testing.T) {
	m, _ := New(Options{MaxClasses: 4})
	m.Apply(1, &Record{Kind: Observe, Model: "m", K: 5, Probs: []float64{0.2, 0.2, 0.2, 0.2, 0.2}, Labels: []int{1}})
	if err := m.Check(&Record{Kind: Observe, Model: "m", K: 5, Probs: []float64{0.2, 0.2, 0.2, 0.2, 0.2}, Labels: []int{1}}); err != nil {
		t.Fatalf("a known model of K = 5: %v", err)
	}
}

// TestRepeatAcrossSegments: a record of one segment repeated in the next
// (above the snapshot's LSN) is damage, not skipped.
func TestRepeatAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	st, _ := Open(dir, StoreOptions{SnapshotEvery: -1, SegmentBytes: 400})
	submitAll(t, st, smallRecords(20))
	kill(st)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	if len(segs) < 3 {
		t.Fatalf("segments %v", segs)
	}
	first, _ := os.ReadFile(segs[0])
	second, _ := os.ReadFile(segs[1])
	offs := frames(t, first)
	last := first[offs[len(offs)-2]:]
	os.WriteFile(segs[1], append(bytes.Clone(last), second...), 0o644)
	_, err := Open(dir, StoreOptions{SnapshotEvery: -1})
	var de *DamageError
	if !errors.As(err, &de) || de.File != segs[1] || de.Offset != 0 {
		t.Fatalf("a record repeated in the next segment: %v", err)
	}
}
