package commands

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestProgressPlainLines: when stderr is not a terminal, progress is a
// plain line now and then, with the phase and the step; --progress=false
// prints nothing.
func TestProgressPlainLines(t *testing.T) {
	defer func(a, e time.Duration) { plainAfter, plainEvery = a, e }(plainAfter, plainEvery)
	plainAfter, plainEvery = 10*time.Millisecond, 20*time.Millisecond
	var b bytes.Buffer
	u := newProgressUI(context.Background(), &syncWriter{w: &b}, true)
	u.Phase("metric %d of %d: %s", 2, 5, "ece_kde")
	fn, done := u.Step("canonical estimate")
	fn(1, 4)
	time.Sleep(60 * time.Millisecond)
	done()
	u.wait()
	s := b.String()
	if !strings.Contains(s, "calib: [metric 2 of 5: ece_kde] canonical estimate 25%, step ETA") || !strings.Contains(s, "since start") {
		t.Errorf("progress lines %q", s)
	}
	if newProgressUI(context.Background(), &b, false) != nil {
		t.Error("--progress=false draws")
	}
}

// syncWriter serialises writes (the progress goroutine writes while the
// test reads only after wait).
type syncWriter struct{ w *bytes.Buffer }

func (s *syncWriter) Write(p []byte) (int, error) { return s.w.Write(p) }
