// Package progress is the one progress convention of calib's packages.
//
// A long computation reports how far it is with a Func: the estimators
// (kde), the bootstrap (metric), the iterative fits (recal) take one in
// their options. A job made of several computations (evaluate, compare,
// report, the experiments) takes a Reporter, which names each part and
// hands out a Func per step. A nil Func or Reporter means no reporting and
// costs nothing. The CLI's progress bars implement Reporter.
package progress

// Func receives the work done so far and the total work of one
// computation, in units the computation defines (kde: blocks of evaluation
// points times bandwidths). The total may grow while the work runs (a
// bandwidth search that refines). It may be called from several goroutines
// at once and must return quickly.
type Func func(done, total int64)

// Reporter shows what a job is doing. Phase names the part of the job now
// running ("metric 3 of 12: ece_kde"); Step starts a step and returns the
// Func that moves it (nil when the reporter shows no amounts) and the
// function that ends it, which the job calls exactly once.
type Reporter interface {
	Phase(format string, args ...any)
	Step(name string) (Func, func())
}

// Start starts a step on r: a nil r gives a nil Func and a no-op end, so
// that callers need no nil checks.
func Start(r Reporter, name string) (Func, func()) {
	if r == nil {
		return nil, func() {}
	}
	return r.Step(name)
}

// Phasef names a part of the job on r (nothing when r is nil).
func Phasef(r Reporter, format string, args ...any) {
	if r != nil {
		r.Phase(format, args...)
	}
}

// Parts reports the finished parts of a job to a Reporter (nil: nothing):
// one step counting the parts, and the phase naming the part last
// finished. Make it with NewParts; call Finished after each part and End
// once.
type Parts struct {
	r           Reporter
	f           Func
	end         func()
	done, total int64
}

// NewParts starts the step name on r; total is the number of parts when
// known, 0 when not (the total then stays one ahead of the count).
func NewParts(r Reporter, name string, total int) *Parts {
	f, end := Start(r, name)
	return &Parts{r: r, f: f, end: end, total: int64(total)}
}

// Finished counts one part, named part. It is not safe for concurrent
// use: callers that finish parts on several goroutines hold a lock.
func (p *Parts) Finished(part string) {
	p.done++
	Phasef(p.r, "%s", part)
	if p.f != nil {
		total := p.total
		if total < p.done {
			total = p.done + 1 // not known: one ahead
		}
		p.f(p.done, total)
	}
}

// End ends the step.
func (p *Parts) End() { p.end() }
