package progress

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Lines is a Reporter that prints the state of a job as one plain line
// every Every, the first After the job started (a job that ends sooner
// prints nothing), for logs and for terminals without progress bars:
//
//	calib: [metric 2 of 5: ece_kde] canonical estimate 25%, step ETA 1.5s (12.3s since start)
//
// The line holds the prefix, the phase in brackets, the step, its
// percentage and an ETA from its rate so far (when the step reports
// amounts), and the time since NewLines. Make it with NewLines and call Stop
// once at the end.
type Lines struct {
	w      io.Writer
	prefix string
	start  time.Time

	mu    sync.Mutex
	phase string
	name  string
	since time.Time
	done  atomic.Int64
	total atomic.Int64

	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// NewLines starts a Lines that writes to w until Stop is called or ctx is
// done.
func NewLines(ctx context.Context, w io.Writer, prefix string, after, every time.Duration) *Lines {
	l := &Lines{w: w, prefix: prefix, start: time.Now(), stop: make(chan struct{})}
	l.wg.Add(1)
	go l.run(ctx, after, every)
	return l
}

// run prints a line every every, the first after after, until Stop or ctx.
func (l *Lines) run(ctx context.Context, after, every time.Duration) {
	defer l.wg.Done()
	wait := time.NewTimer(after)
	defer wait.Stop()
	for {
		select {
		case <-wait.C:
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		}
		l.print()
		wait.Reset(every)
	}
}

// print prints one line (nothing before the first phase or step).
func (l *Lines) print() {
	l.mu.Lock()
	phase, name, since := l.phase, l.name, l.since
	l.mu.Unlock()
	if name == "" && phase == "" {
		return
	}
	line := l.prefix
	if phase != "" {
		line += "[" + phase + "] "
	}
	line += name
	done, total := l.done.Load(), l.total.Load()
	if total > 0 && done > 0 {
		frac := float64(done) / float64(total)
		line += fmt.Sprintf(" %.0f%%", 100*frac)
		if frac < 1 {
			line += fmt.Sprintf(", step ETA %s", Round(time.Duration(float64(time.Since(since))*(1-frac)/frac)))
		}
	}
	line += fmt.Sprintf(" (%s since start)", Round(time.Since(l.start)))
	fmt.Fprintln(l.w, line)
}

// Phase names the part of the job that runs now.
func (l *Lines) Phase(format string, args ...any) {
	l.mu.Lock()
	l.phase = fmt.Sprintf(format, args...)
	l.mu.Unlock()
}

// Step starts the step name; its Func sets the amounts of the next lines
// (Monotone: a count below one already seen is dropped).
func (l *Lines) Step(name string) (Func, func()) {
	l.Status(name)
	return Monotone(func(done, total int64) {
		l.done.Store(done)
		l.total.Store(total)
	}), func() {}
}

// Status starts the step name, which reports no amounts, and returns the
// function that ends it.
func (l *Lines) Status(name string) func() {
	l.mu.Lock()
	l.name, l.since = name, time.Now()
	l.mu.Unlock()
	l.done.Store(0)
	l.total.Store(0)
	return func() {}
}

// Stop stops the lines and waits until none is being written. It may be
// called more than once.
func (l *Lines) Stop() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// Monotone returns a Func that passes to f only the calls whose done is
// above every done seen before, so that a step's count never goes back
// when workers report out of order. It is safe for concurrent use.
func Monotone(f Func) Func {
	var last atomic.Int64
	return func(done, total int64) {
		for {
			old := last.Load()
			if done <= old {
				return
			}
			if last.CompareAndSwap(old, done) {
				f(done, total)
				return
			}
		}
	}
}

// Round rounds a duration for display: to the second above a minute, else
// to a tenth of a second.
func Round(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
