package pkgerr

import (
	"errors"
	"fmt"
	"testing"
)

// TestReason: the text is the package's name and the reason; Reason and
// Field read them through wrapping; errors.Is sees the wrapped cause.
func TestReason(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("context: %w", FieldErrorf("alarm", "ARL", "ARL %d: want at least 2: %w", 1, cause))
	if got := err.Error(); got != "context: alarm: ARL 1: want at least 2: cause" {
		t.Errorf("text %q", got)
	}
	if got := Reason(err); got != "ARL 1: want at least 2: cause" {
		t.Errorf("Reason %q", got)
	}
	if Field(err) != "ARL" || !errors.Is(err, cause) {
		t.Errorf("Field %q, Is %v", Field(err), errors.Is(err, cause))
	}
	plain := errors.New("x: y")
	if Reason(plain) != "x: y" || Field(plain) != "" {
		t.Errorf("a plain error: %q %q", Reason(plain), Field(plain))
	}
}
