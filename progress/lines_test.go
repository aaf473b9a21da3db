package progress

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the printing goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLines: the lines name the phase and the step with its percentage and
// ETA; a count that goes back is ignored; nothing is printed before After
// or after Stop.
func TestLines(t *testing.T) {
	var b lockedBuffer
	l := NewLines(context.Background(), &b, "calib: ", 10*time.Millisecond, 20*time.Millisecond)
	l.Phase("metric %d of %d: %s", 2, 5, "ece_kde")
	fn, done := l.Step("canonical estimate")
	fn(1, 4)
	fn(0, 4) // out of order: dropped
	time.Sleep(60 * time.Millisecond)
	done()
	l.Stop()
	l.Stop()
	s := b.String()
	if !strings.Contains(s, "calib: [metric 2 of 5: ece_kde] canonical estimate 25%, step ETA ") || !strings.Contains(s, "since start)\n") {
		t.Errorf("lines %q", s)
	}
	n := len(s)
	time.Sleep(30 * time.Millisecond)
	if len(b.String()) != n {
		t.Error("a line after Stop")
	}

	var quiet lockedBuffer
	q := NewLines(context.Background(), &quiet, "", time.Hour, time.Hour)
	q.Status("short")()
	q.Stop()
	if quiet.String() != "" {
		t.Errorf("a short job printed %q", quiet.String())
	}
}

// TestMonotone: only increasing counts get through.
func TestMonotone(t *testing.T) {
	var got []int64
	f := Monotone(func(done, total int64) { got = append(got, done) })
	for _, d := range []int64{1, 3, 2, 3, 0, 5} {
		f(d, 10)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 5 {
		t.Errorf("passed %v, want [1 3 5]", got)
	}
}

// TestRound: tenths of a second below a minute, seconds above.
func TestRound(t *testing.T) {
	for d, want := range map[time.Duration]time.Duration{
		1234 * time.Millisecond:  1200 * time.Millisecond,
		61700 * time.Millisecond: 62 * time.Second,
	} {
		if got := Round(d); got != want {
			t.Errorf("Round(%v) = %v, want %v", d, got, want)
		}
	}
}
