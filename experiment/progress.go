package experiment

import "github.com/calib-dev/calib/progress"

// parts reports the finished parts of an experiment to a progress.Reporter
// (nil: nothing): one step counting the parts and the phase naming the
// part last finished. total is the number of parts when known; 0 lets the
// total grow one ahead of the count.
type parts struct {
	r           progress.Reporter
	f           progress.Func
	end         func()
	done, total int64
}

func newParts(r progress.Reporter, name string, total int) *parts {
	f, end := progress.Start(r, name)
	return &parts{r: r, f: f, end: end, total: int64(total)}
}

// finished counts one part, named part.
func (p *parts) finished(part string) {
	p.done++
	progress.Phasef(p.r, "%s", part)
	if p.f != nil {
		total := p.total
		if total < p.done {
			total = p.done + 1 // not known: one ahead
		}
		p.f(p.done, total)
	}
}

// close ends the step.
func (p *parts) close() { p.end() }
