package cli

import (
	"strings"
	"testing"
)

// TestEmptyNamesAreRefused: a flag that names metrics, notions, tests or
// a convention, given empty, is refused before any data is read (it ran
// the defaults), in every command that has it.
func TestEmptyNamesAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "nope.csv", "--metrics", ""}, {"eval", "nope.csv", "--metrics", " "}, {"eval", "nope.csv", "--mode", ""},
		{"eval", "nope.csv", "--convention", ""}, {"eval", "nope.csv", "--variational-family", ""}, {"eval", "nope.csv", "--p", ""},
		{"test", "nope.csv", "--tests", ""},
	} {
		_, stderr, code := run(t, args...)
		if code != 2 || !strings.Contains(stderr, "names nothing; leave the flag out for its default") {
			t.Errorf("%q: exit %d, %q", args, code, stderr)
		}
	}
}
