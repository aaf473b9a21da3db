package beam

import (
	"errors"
	"fmt"
	"testing"
)

// TestReason: the package's errors read "beam: REASON" and Reason gives
// REASON; an error wrapping one keeps its whole message; a bad encoding is
// this package's error, wraps ErrCoder and names it.
func TestReason(t *testing.T) {
	e := errorf("shard %d: no rows", 3)
	if e.Error() != "beam: shard 3: no rows" || Reason(e) != "shard 3: no rows" {
		t.Errorf("%q, reason %q", e, Reason(e))
	}
	w := fmt.Errorf("running: %w", e)
	if Reason(w) != "running: beam: shard 3: no rows" {
		t.Errorf("wrapped: reason %q", Reason(w))
	}
	c := errorf("%w: %d bytes after a batch", ErrCoder, 7)
	if !errors.Is(c, ErrCoder) || c.Error() != "beam: bad encoding: 7 bytes after a batch" || Reason(c) != "bad encoding: 7 bytes after a batch" {
		t.Errorf("coder error %q, reason %q", c, Reason(c))
	}
	if Reason(errors.New("other")) != "other" {
		t.Error("another package's error changed")
	}
}
