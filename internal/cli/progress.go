package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/calib-dev/calib/kde"
)

// plainEvery is how often progressUI prints a plain line when stderr is not
// a terminal; plainAfter is how long a command runs before the first one
// (short commands print nothing). Variables for the tests.
var (
	plainEvery = 10 * time.Second
	plainAfter = 5 * time.Second
)

// progressUI shows what a long command is doing. On a terminal it draws one
// bar per step, named with the command's phase ("metric 3 of 12", "fit 2
// of 9") and showing the step's percentage, its ETA (from the step's rate so
// far) and the time since the command started. When stderr is not a
// terminal it prints a plain line every plainEvery instead (after
// plainAfter). A nil *progressUI shows nothing (--progress=false).
type progressUI struct {
	p     *mpb.Progress // nil: plain lines
	w     io.Writer
	start time.Time

	mu    sync.Mutex
	phase string // e.g. "metric 3 of 12 (ece_kde)"
	name  string // the current step
	since time.Time
	done  atomic.Int64
	total atomic.Int64
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// newProgressUI returns a progressUI on w, or nil when show is false.
func newProgressUI(ctx context.Context, w io.Writer, show bool) *progressUI {
	if !show {
		return nil
	}
	u := &progressUI{w: w, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			u.p = mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(32))
			return u
		}
	}
	u.stop = make(chan struct{})
	u.wg.Add(1)
	go u.plainLines(ctx)
	return u
}

// plainLines prints the state every plainEvery until wait or ctx is done.
func (u *progressUI) plainLines(ctx context.Context) {
	defer u.wg.Done()
	first := time.NewTimer(plainAfter)
	defer first.Stop()
	select {
	case <-first.C:
	case <-u.stop:
		return
	case <-ctx.Done():
		return
	}
	tick := time.NewTicker(plainEvery)
	defer tick.Stop()
	for {
		u.printLine()
		select {
		case <-tick.C:
		case <-u.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// printLine prints one plain progress line.
func (u *progressUI) printLine() {
	u.mu.Lock()
	phase, name, since := u.phase, u.name, u.since
	u.mu.Unlock()
	if name == "" && phase == "" {
		return
	}
	line := "calib: "
	if phase != "" {
		line += "[" + phase + "] "
	}
	line += name
	done, total := u.done.Load(), u.total.Load()
	if total > 0 && done > 0 {
		frac := float64(done) / float64(total)
		line += fmt.Sprintf(" %.0f%%", 100*frac)
		if el := time.Since(since); frac < 1 {
			line += fmt.Sprintf(", step ETA %s", roundDuration(time.Duration(float64(el)*(1-frac)/frac)))
		}
	}
	line += fmt.Sprintf(" (%s since start)", roundDuration(time.Since(u.start)))
	fmt.Fprintln(u.w, line)
}

func roundDuration(d time.Duration) time.Duration {
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// Phase names the part of the command that runs now, e.g. "metric 3 of
// 12: ece_kde" (evaluate.Progress).
func (u *progressUI) Phase(format string, args ...any) {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.phase = fmt.Sprintf(format, args...)
	u.mu.Unlock()
}

// label is the name of a step with the phase.
func (u *progressUI) label(name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.phase == "" {
		return name
	}
	return "[" + u.phase + "] " + name
}

// begin records the start of a step.
func (u *progressUI) begin(name string) {
	u.mu.Lock()
	u.name, u.since = name, time.Now()
	u.mu.Unlock()
	u.done.Store(0)
	u.total.Store(0)
}

// Step starts a step named name and returns the kde.Progress that moves it
// and a function that completes (and removes) it (evaluate.Progress).
func (u *progressUI) Step(name string) (kde.Progress, func()) {
	if u == nil {
		return nil, func() {}
	}
	u.begin(name)
	var last atomic.Int64
	// monotone keeps the reported count from going back (workers report
	// out of order).
	monotone := func(done int64) bool {
		for {
			old := last.Load()
			if done <= old {
				return false
			}
			if last.CompareAndSwap(old, done) {
				return true
			}
		}
	}
	if u.p == nil {
		return func(done, total int64) {
			if monotone(done) {
				u.done.Store(done)
				u.total.Store(total)
			}
		}, func() {}
	}
	bar := u.p.AddBar(0, mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(u.label(name), decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace), ""),
			decor.Any(func(decor.Statistics) string {
				return "(" + roundDuration(time.Since(u.start)).String() + " since start)"
			}, decor.WCSyncSpace)))
	fn := func(done, total int64) {
		if !monotone(done) {
			return
		}
		bar.SetTotal(total, false)
		bar.SetCurrent(done)
	}
	return fn, func() { bar.SetTotal(-1, true) }
}

// status shows name while a step without a measure of progress runs and
// returns the function that removes it.
func (u *progressUI) status(name string) func() {
	if u == nil {
		return func() {}
	}
	u.begin(name)
	if u.p == nil {
		return func() {}
	}
	bar := u.p.New(0, mpb.SpinnerStyle(), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(u.label(name), decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			return "(" + roundDuration(time.Since(u.start)).String() + " since start)"
		}, decor.WCSyncSpace)))
	return func() { bar.SetTotal(-1, true) }
}

// Status is status: report.Build shows its steps without a measure of
// progress (drawing the figures) through it.
func (u *progressUI) Status(name string) func() { return u.status(name) }

// wait waits for the bars to be drawn for the last time, or stops the plain
// lines.
func (u *progressUI) wait() {
	if u == nil {
		return
	}
	if u.p != nil {
		u.p.Wait()
		return
	}
	if u.stop != nil {
		u.once.Do(func() { close(u.stop) })
		u.wg.Wait()
	}
}
