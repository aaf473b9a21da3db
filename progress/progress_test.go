package progress_test

import (
	"fmt"
	"testing"

	"github.com/calib-dev/calib/progress"
)

// lines is a Reporter that records what it is told.
type lines []string

func (l *lines) Phase(format string, args ...any) {
	*l = append(*l, "phase "+fmt.Sprintf(format, args...))
}
func (l *lines) Step(name string) (progress.Func, func()) {
	*l = append(*l, "start "+name)
	return func(done, total int64) { *l = append(*l, fmt.Sprintf("%s %d/%d", name, done, total)) },
		func() { *l = append(*l, "end "+name) }
}

func TestStartNil(t *testing.T) {
	f, end := progress.Start(nil, "x")
	if f != nil {
		t.Error("a nil Reporter must give a nil Func")
	}
	end()
	progress.Phasef(nil, "nothing %d", 1)
	var l lines
	progress.Phasef(&l, "part %d", 2)
	f, end = progress.Start(&l, "sweep")
	f(1, 2)
	end()
	want := []string{"phase part 2", "start sweep", "sweep 1/2", "end sweep"}
	if fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", l, want)
	}
}
