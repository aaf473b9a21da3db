package cli

import (
	"context"
	"io"
	"os"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/calib-dev/calib/kde"
)

// progressUI draws one progress bar per step on a terminal. A nil
// *progressUI draws nothing (output that is not a terminal).
type progressUI struct {
	p *mpb.Progress
}

// newProgressUI returns a progressUI drawing on w when w is a terminal and
// show is true, else nil.
func newProgressUI(ctx context.Context, w io.Writer, show bool) *progressUI {
	f, ok := w.(*os.File)
	if !show || !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progressUI{p: mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(32))}
}

// step starts a bar named name and returns the kde.Progress that moves it
// and a function that completes (and removes) it.
func (u *progressUI) step(name string) (kde.Progress, func()) {
	if u == nil {
		return nil, func() {}
	}
	bar := u.p.AddBar(0, mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)))
	var last atomic.Int64
	fn := func(done, total int64) {
		// Workers report out of order: keep the bar monotone.
		for {
			old := last.Load()
			if done <= old {
				return
			}
			if last.CompareAndSwap(old, done) {
				break
			}
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
	bar := u.p.New(0, mpb.SpinnerStyle(), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)))
	return func() { bar.SetTotal(-1, true) }
}

// wait waits for the bars to be drawn for the last time.
func (u *progressUI) wait() {
	if u != nil {
		u.p.Wait()
	}
}
