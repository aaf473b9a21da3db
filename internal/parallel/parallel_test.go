package parallel

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestForVisitsEveryItemOnce(t *testing.T) {
	for _, w := range []int{0, 1, 3, 100} {
		seen := make([]int32, 1000)
		For(len(seen), w, func() struct{} { return struct{}{} }, func(_ struct{}, i int) { atomic.AddInt32(&seen[i], 1) })
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("workers %d: item %d ran %d times", w, i, c)
			}
		}
	}
}

// TestForContextStopsOnCancel: a cancelled context stops the loop after the
// items in flight, and the error says why.
func TestForContextStopsOnCancel(t *testing.T) {
	for _, w := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		var ran atomic.Int64
		err := ForContext(ctx, 1_000_000, w, func() struct{} { return struct{}{} }, func(_ struct{}, i int) {
			if ran.Add(1) == 10 {
				cancel()
			}
			time.Sleep(time.Millisecond)
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("workers %d: err = %v, want context.Canceled", w, err)
		}
		if n := ran.Load(); n > 10+int64(w) {
			t.Errorf("workers %d: %d items ran after the cancel at item 10", w, n)
		}
	}
	if err := ForContext(context.Background(), 5, 2, func() int { return 0 }, func(int, int) {}); err != nil {
		t.Fatalf("uncancelled: %v", err)
	}
}

// TestWorkerPanicReachesCaller: a panic in body on a worker goroutine is
// re-raised in the caller's goroutine, where recover sees it.
func TestWorkerPanicReachesCaller(t *testing.T) {
	var got any
	func() {
		defer func() { got = recover() }()
		For(1000, 4, func() int { return 0 }, func(_ int, i int) {
			if i == 500 {
				panic("item 500")
			}
		})
	}()
	p, ok := got.(*WorkerPanic)
	if !ok || p.Value != "item 500" || !strings.Contains(p.Error(), "item 500") || len(p.Stack) == 0 {
		t.Fatalf("recovered %#v, want a *WorkerPanic of \"item 500\" with its stack", got)
	}
}
