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
		{[]string{"plot", "ks", "nope.csv", "-o", "f.png", "--seed", "5"}, "--seed applies to the figure reliability"},
		{[]string{"plot", "ks", "nope.csv", "-o", "f.png", "--val-labels", "y.npy"}, "--val-labels applies to the validation set of --val"},
		{[]string{"plot", "reliability", "nope.csv", "-o", "f.json", "--convention", "torchmetrics", "--binning", "equal_mass"}, "--binning equal_mass: --convention torchmetrics's library has no equal-mass bins"},
		{[]string{"fit", "nope.csv", "--method", "dirichlet-odir", "-o", "m.json", "--lambda", "0.1"}, "--lambda and --mu: give both"},
		{[]string{"fit", "nope.csv", "--method", "dirichlet-odir", "-o", "m.json", "--lambda", "0.1", "--mu", "0.1", "--grid", "full"}, "--grid applies to the cross-validation"},
		{[]string{"fit", "nope.csv", "--method", "vector", "-o", "m.json", "--mu", "0.1", "--seed", "3"}, "--seed applies to the cross-validation"},
		{[]string{"fit", "nope.csv", "--method", "platt", "-o", "m.json", "--scalar-mode", "bogus"}, "--scalar-mode \"bogus\": valid modes are"},
		{[]string{"fit", "nope.csv", "--method", "histogram", "-o", "m.json", "--scalar-mode", "one_vs_rest"}, "--scalar-mode one_vs_rest applies to --method isotonic"},
		{[]string{"train", "--data", "nope.csv", "-o", "d", "--loss", "xe", "--smoothing", "0.2"}, "--smoothing applies to --loss ls, not xe"},
		{[]string{"train", "--data", "nope.csv", "-o", "d", "--loss", "focal", "--p", "2"}, "--p applies to --loss kde-xe, not focal"},
		{[]string{"train", "--data", "nope.csv", "-o", "d", "--momentum", "0.5"}, "--momentum applies to --optimizer sgd, not adam"},
		{[]string{"experiment", "tests", "-o", "d", "--resamples", "19"}, "--resamples 19: a resampled p-value is at least 1/(B+1)"},
		{[]string{"experiment", "tests", "-o", "d", "--power=false", "--power-sets", "5"}, "--power-sets applies to the power study"},
		{[]string{"experiment", "tests", "-o", "d", "--split", "val"}, "--split applies to the LOGIT_DIR arguments"},
		{[]string{"eval", "nope.csv", "--logits", "--tolerance", "0.1"}, "--tolerance applies to probabilities"},
		{[]string{"eval", "nope.csv", "--metrics", "tce", "--convention", "sklearn"}, "--convention applies to ece_bin, mce, ece_sweep, smece"},
		{[]string{"eval", "nope.csv", "--metrics", "smece", "--convention", "sklearn"}, "--convention sklearn applies to ece_bin and mce"},
		{[]string{"eval", "nope.csv", "--metrics", "brier", "--p-values"}, "--p-values applies to ece_kde"},
		{[]string{"eval", "nope.csv", "--metrics", "ece_kde", "--mode", "canonical", "--class-mean"}, "--class-mean applies to ece_kde's class_wise notion"},
		{[]string{"eval", "nope.csv", "--metrics", "ece_kde", "--mode", "top_label,all", "--class-mean"}, "which --mode all,top_label leaves out"},
		{[]string{"eval", "nope.csv", "--metrics", "ece_kde", "--mode", "canonical", "--exact"}, "--exact applies to the one-dimensional notions"},
		{[]string{"eval", "nope.csv", "--metrics", "ece_kde", "--bandwidth", "0.1", "--bandwidth-objective", "reference"}, "--bandwidth-objective chooses the bandwidth, which --bandwidth 0.1 fixes"},
		{[]string{"eval", "nope.csv", "--stream", "--metrics", "brier", "--eval-points", "5"}, "--eval-points applies to ece_kde"},
		{[]string{"eval", "nope.csv", "--p", "1,1"}, "--p \"1,1\": 1 given twice"},
		{[]string{"eval", "nope.csv", "--metrics", "brier,,nll"}, "an empty name between commas"},
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
