package kde

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/calib-dev/calib/progress"
)

// canceled returns an error wrapping ctx.Err() when ctx is done, else nil
// (also for a nil ctx). The sweeps of a cancelled call return early with
// incomplete sums, so every public function checks it before it reads them.
func canceled(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kde: %w", err)
	}
	return nil
}

// Progress receives the work done so far and the total work of a call, in
// units of (blocks of 8 evaluation points) x (bandwidths evaluated).
// SelectBandwidth announces its refinement's largest possible work with the
// grid's and reports what it did not use as done at the end. It may
// be called from several goroutines at once and must return quickly. It is
// calib's one progress function, progress.Func.
type Progress = progress.Func

// tracker counts the work of one call for a Progress callback. A nil
// tracker does nothing.
type tracker struct {
	fn          Progress
	done, total atomic.Int64
}

func newTracker(fn Progress) *tracker {
	if fn == nil {
		return nil
	}
	return &tracker{fn: fn}
}

// expect adds units of work to the total.
func (t *tracker) expect(units int64) {
	if t != nil {
		t.total.Add(units)
	}
}

// add reports units of work done.
func (t *tracker) add(units int64) {
	if t != nil {
		t.fn(t.done.Add(units), t.total.Load())
	}
}

// blocks is the number of evaluation-point blocks of a sweep over n points.
func blocks(n int) int { return (n + blockJ - 1) / blockJ }
