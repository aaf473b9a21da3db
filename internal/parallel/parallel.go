// Package parallel runs independent work items on several goroutines.
package parallel

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Workers returns w when positive, else GOMAXPROCS.
func Workers(w int) int {
	if w > 0 {
		return w
	}
	return runtime.GOMAXPROCS(0)
}

// For calls body(state, i) for every i in [0, n) on up to workers
// goroutines (0 means GOMAXPROCS). Each goroutine gets its own state from
// newState (scratch buffers). Items are handed out in increasing order, but
// which goroutine runs an item is not fixed: body must write its results to
// places owned by item i, so that the results do not depend on the number of
// goroutines or on scheduling.
func For[S any](n, workers int, newState func() S, body func(state S, i int)) {
	_ = ForContext(context.Background(), n, workers, newState, body)
}

// ForContext is For that stops handing out items once ctx is done and then
// returns ctx.Err() (items already started run to their end, so an item
// should take well under a second). The results of a stopped loop are
// incomplete: a caller that gets an error must discard them. A nil ctx never
// stops.
func ForContext[S any](ctx context.Context, n, workers int, newState func() S, body func(state S, i int)) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	stopped := func() bool {
		if done == nil {
			return false
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	w := min(Workers(workers), n)
	if w <= 1 {
		if n > 0 {
			s := newState()
			for i := 0; i < n && !stopped(); i++ {
				body(s, i)
			}
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Pointer[WorkerPanic]
		for range w {
			wg.Go(func() {
				defer func() {
					if r := recover(); r != nil {
						failed.CompareAndSwap(nil, &WorkerPanic{Value: r, Stack: debug.Stack()})
					}
				}()
				s := newState()
				for !stopped() && failed.Load() == nil {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					body(s, i)
				}
			})
		}
		wg.Wait()
		if p := failed.Load(); p != nil {
			panic(p) // in the caller's goroutine, where a recover can see it
		}
	}
	if ctx != nil {
		return ctx.Err()
	}
	return nil
}

// WorkerPanic is what For and ForContext panic with, in the caller's
// goroutine, when body panicked on a worker goroutine (the other workers
// stop taking items): the value body panicked with and that goroutine's
// stack. A panic on a goroutine of its own would end the process whatever
// the caller does; re-raised here it reaches the caller's recover (the C
// ABI's boundary, a test's).
type WorkerPanic struct {
	Value any
	Stack []byte
}

func (p *WorkerPanic) Error() string {
	return fmt.Sprintf("panic in a worker goroutine: %v\n%s", p.Value, p.Stack)
}
