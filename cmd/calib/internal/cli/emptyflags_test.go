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

// TestUnreadOptionsAreRefused: an option that no computed metric reads
// (evalflag.Readers) is refused before any data is read, naming what
// would read it; with one of its metrics it is taken.
func TestUnreadOptionsAreRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "nope.csv", "--metrics", "brier", "--smece-sigma", "0.1"}, "--smece-sigma applies to smece"},
		{[]string{"eval", "nope.csv", "--metrics", "brier", "--ace-bins", "10"}, "--ace-bins applies to ace"},
		{[]string{"eval", "nope.csv", "--metrics", "brier", "--variational-family", "temperature"}, "--variational-family applies to ece_variational"},
		{[]string{"eval", "nope.csv", "--metrics", "ks", "--convention", "sklearn"}, "--convention applies to ece_bin"},
		{[]string{"eval", "nope.csv", "--mmce-width", "0.3"}, "--mmce-width applies to mmce"},
		{[]string{"eval", "nope.csv", "--mode", "canonical", "--ks-r", "1"}, "--ks-r applies to ks"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "none is computed") {
			t.Errorf("%q: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
	// Read: no such error (the file's absence is the error).
	_, stderr, _ := run(t, "eval", "nope.csv", "--metrics", "smece", "--smece-sigma", "0.1")
	if strings.Contains(stderr, "none is computed") {
		t.Errorf("smece with --smece-sigma: %q", stderr)
	}
}
