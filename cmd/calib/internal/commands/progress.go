package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/calib-dev/calib/progress"
)

// plainEvery is how often progress is printed as a plain line when stderr
// is not a terminal; plainAfter is how long a command runs before the first
// one (short commands print nothing). Variables for the tests.
var (
	plainEvery = 10 * time.Second
	plainAfter = 5 * time.Second
)

// progressUI shows what a long command is doing (a progress.Reporter; a
// nil *progressUI, for --progress=false, shows nothing). On a terminal it
// draws one mpb bar per step, named with the command's phase ("metric 3 of
// 12", "fit 2 of 9") and showing the step's percentage, its ETA (from the
// step's rate so far) and the time since the command started; otherwise
// it prints progress.Lines.
type progressUI struct {
	lines *progress.Lines // not a terminal
	bars  *mpb.Progress
	start time.Time
	phase atomic.Pointer[string] // e.g. "metric 3 of 12: ece_kde"
}

// newProgressUI returns a progressUI on w, or nil when show is false.
func newProgressUI(ctx context.Context, w io.Writer, show bool) *progressUI {
	if !show {
		return nil
	}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return &progressUI{bars: mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(32)), start: time.Now()}
		}
	}
	return &progressUI{lines: progress.NewLines(ctx, w, "calib: ", plainAfter, plainEvery)}
}

// Phase names the part of the command that runs now.
func (u *progressUI) Phase(format string, args ...any) {
	switch {
	case u == nil:
	case u.lines != nil:
		u.lines.Phase(format, args...)
	default:
		u.phase.Store(new(fmt.Sprintf(format, args...)))
	}
}

// Step starts a step named name and returns the progress.Func that moves
// it and the function that completes (and removes) it.
func (u *progressUI) Step(name string) (progress.Func, func()) {
	switch {
	case u == nil:
		return nil, func() {}
	case u.lines != nil:
		return u.lines.Step(name)
	}
	bar := u.bars.AddBar(0, mpb.BarRemoveOnComplete(), mpb.PrependDecorators(u.name(name)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace), ""), u.elapsed()))
	return progress.Monotone(func(done, total int64) {
		bar.SetTotal(total, false)
		bar.SetCurrent(done)
	}), func() { bar.SetTotal(-1, true) }
}

// Status shows name while a step without a measure of progress runs
// (report.Build's figures, the sharpness experiment) and returns the
// function that removes it.
func (u *progressUI) Status(name string) func() {
	switch {
	case u == nil:
		return func() {}
	case u.lines != nil:
		return u.lines.Status(name)
	}
	bar := u.bars.New(0, mpb.SpinnerStyle(), mpb.BarRemoveOnComplete(), mpb.PrependDecorators(u.name(name)), mpb.AppendDecorators(u.elapsed()))
	return func() { bar.SetTotal(-1, true) }
}

// name is the decorator of a bar's name: its step after the phase.
func (u *progressUI) name(step string) decor.Decorator {
	if p := u.phase.Load(); p != nil {
		step = "[" + *p + "] " + step
	}
	return decor.Name(step, decor.WCSyncSpaceR)
}

// elapsed is the decorator of the time since the command started.
func (u *progressUI) elapsed() decor.Decorator {
	return decor.Any(func(decor.Statistics) string {
		return "(" + progress.Round(time.Since(u.start)).String() + " since start)"
	}, decor.WCSyncSpace)
}

// wait waits for the bars to be drawn for the last time, or stops the
// plain lines.
func (u *progressUI) wait() {
	switch {
	case u == nil:
	case u.lines != nil:
		u.lines.Stop()
	default:
		u.bars.Wait()
	}
}
