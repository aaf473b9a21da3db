// Package parallel runs independent work items on several goroutines.
package parallel

import (
	"runtime"
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
	w := min(Workers(workers), n)
	if w <= 1 {
		if n > 0 {
			s := newState()
			for i := 0; i < n; i++ {
				body(s, i)
			}
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Go(func() {
			s := newState()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body(s, i)
			}
		})
	}
	wg.Wait()
}
