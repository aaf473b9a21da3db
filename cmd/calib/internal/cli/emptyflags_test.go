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
// (evalflag.Readers), or that the chosen tests, method, objective, figure
// or sections do not read (refuseUnread), is refused before any data is
// read, naming what would read it; with one of its readers it is taken.
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
		{[]string{"eval", "nope.csv", "--metrics", "ece_bin,sharpness", "--mode", "top_label"}, "--mode applies to ece_kde, smece, ece_variational"},
		{[]string{"eval", "nope.csv", "--metrics", "ks,mce", "--p", "1"}, "--p applies to ece_kde"},
		{[]string{"eval", "nope.csv", "--metrics", "ks", "--bins", "10"}, "--bins applies to ece_bin, mce, ece_bin_debiased"},
		{[]string{"eval", "nope.csv", "--metrics", "smece", "--binning", "equal_mass"}, "--binning applies to ece_bin"},
		{[]string{"eval", "nope.csv", "--metrics", "brier", "--reference-bins"}, "--reference-bins applies to ece_bin"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "none is computed") {
			t.Errorf("%q: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
	// The other commands: a flag that the chosen tests, method, objective,
	// figure or sections do not read.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "nope.csv", "--tests", "skce", "--resamples", "500"}, "--resamples applies to --tests ks, kuiper"},
		{[]string{"fit", "nope.csv", "--method", "isotonic", "-o", "m.json", "--grid", "full"}, "--grid applies to --method vector"},
		{[]string{"fit", "nope.csv", "--method", "temperature", "-o", "m.json", "--knots", "5", "--bins", "4"}, "--bins applies to --method histogram"},
		{[]string{"bandwidth", "nope.csv", "--bandwidth-objective", "reference", "--no-refine"}, "--no-refine applies to --bandwidth-objective loo, not reference"},
		{[]string{"compare", "--val", "nope.csv", "--test", "nope.csv", "--methods", "isotonic", "--grid", "full"}, "--grid applies to --methods vector, matrix-odir, dirichlet-odir, not isotonic"},
		{[]string{"report", "nope.csv", "-o", "r.html", "--metrics", "brier", "--smece-sigma", "0.1"}, "--smece-sigma applies to smece"},
		{[]string{"report", "nope.csv", "-o", "r.html", "--ace-bins", "10"}, "--ace-bins applies to ace"},
		{[]string{"report", "nope.csv", "-o", "r.html", "--methods", "isotonic"}, "--methods applies to the recalibration comparison, which needs --val"},
		{[]string{"plot", "ks", "nope.csv", "-o", "f.png", "--methods", "isotonic"}, "--methods applies to the figure compare, not ks"},
		{[]string{"plot", "reliability", "nope.csv", "-o", "f.png", "--notion", "top_label"}, "--notion applies to the figure bandwidth, not reliability"},
		{[]string{"plot", "smooth", "nope.csv", "-o", "f.png", "--bins", "20"}, "--bins applies to the figure reliability, not smooth"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
	// Read: no such error (the file's absence is the error).
	_, stderr, _ := run(t, "eval", "nope.csv", "--metrics", "smece", "--smece-sigma", "0.1")
	if strings.Contains(stderr, "none is computed") {
		t.Errorf("smece with --smece-sigma: %q", stderr)
	}
}
