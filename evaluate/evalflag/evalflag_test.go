package evalflag

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

func loadTest(t *testing.T) *data.Set {
	t.Helper()
	s, err := data.Load("../testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBandwidthNotion: the notion of a bandwidth selection ("" is
// canonical, binary for one column; one notion only).
func TestBandwidthNotion(t *testing.T) {
	s := loadTest(t) // K = 3
	bin := &data.Set{N: 2, K: 1, Binary: true}
	for _, c := range []struct {
		mode string
		s    *data.Set
		want kde.Notion
	}{{"", nil, kde.Canonical}, {"", s, kde.Canonical}, {"", bin, kde.Binary}, {"top_label", s, kde.TopLabel}, {"all", nil, kde.Canonical}} {
		if n, err := BandwidthNotion(c.mode, c.s); err != nil || n != c.want {
			t.Errorf("BandwidthNotion(%q): %v, %v; want %v", c.mode, n, err, c.want)
		}
	}
	for mode, want := range map[string]string{"canonical,top_label": "bandwidth takes one notion, got 2", "nope": `unknown notion "nope"`, "binary": "needs one-column input"} {
		var oe *evaluate.OptionError
		if _, err := BandwidthNotion(mode, s); !errors.As(err, &oe) || oe.Option != "mode" || !strings.Contains(err.Error(), want) {
			t.Errorf("BandwidthNotion(%q): %v, want %q", mode, err, want)
		}
	}
	if _, err := BandwidthNotion("all", s); err == nil || !strings.Contains(err.Error(), "got 3") {
		t.Errorf("all on K = 3: %v", err)
	}
}

// parse registers the flags of cmd on a new standard-library flag set
// (as calib-beam's), parses args and returns the flags and what was given.
func parse(t *testing.T, cmd Command, args ...string) (*Flags, func(string) bool) {
	t.Helper()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := Register(fs, cmd)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f, func(name string) bool { return set[name] }
}

// TestFlagsOptions: the flags, read back, set the options they name; a
// list of metrics makes Evaluate strict (not with "all"); --mode alone
// means ece_kde; each error, of the options or of CheckSet against the
// set, is an OptionError naming its option.
func TestFlagsOptions(t *testing.T) {
	f, given := parse(t, Eval, "--p", "1", "--bandwidth", "0.1", "--metrics", "ks,ece_kde,ece_bin", "--binning", "equal-mass", "--bin-rule", "doane", "--ks-r", "1,2", "--mode", "canonical", "--seed", "7")
	o, err := f.Options(given, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSet(o, loadTest(t)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.P, evaluate.Exponents{1}) || o.Bandwidth != 0.1 || !slices.Equal(o.Metrics, evaluate.MetricSet{"ece_kde", "ece_bin", "ks"}) || !o.Strict ||
		o.Bins != (metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane, Bins: metric.DefaultBins}) || !slices.Equal(o.KS.R, evaluate.Ranks{1, 2}) || o.Seed != 7 || o.Mode.String() != "canonical" {
		t.Errorf("parsed %+v", o)
	}
	if f, given := parse(t, Eval, "--mode", "top_label"); true {
		if o, err := f.Options(given, nil); err != nil || !slices.Equal(o.Metrics, evaluate.MetricSet{evaluate.ECEKDE}) || !o.Strict {
			t.Errorf("--mode alone: %+v, %v", o.Metrics, err)
		}
	}
	if f, given := parse(t, Eval, "--metrics", "brier, all"); true {
		if o, err := f.Options(given, nil); err != nil || !slices.Equal(o.Metrics, evaluate.Metrics) || o.Strict {
			t.Errorf("all: %+v, %v", o.Metrics, err)
		}
	}
	for _, c := range []struct {
		args   []string
		option string
		want   string
	}{
		{[]string{"--mode", "nope"}, "mode", "mode: unknown notion"},
		{[]string{"--mode", "binary"}, "mode", "mode: the binary notion needs one-column input"},
		{[]string{"--bandwidth-objective", "x"}, "bandwidth-objective", "bandwidth-objective: unknown bandwidth objective"},
		{[]string{"--binning", "x"}, "binning", "binning: unknown binning"},
		{[]string{"--bin-rule", "x"}, "bin-rule", "bin-rule: unknown bin rule"},
		{[]string{"--metrics", "x"}, "metrics", "metrics: unknown metric"},
		{[]string{"--metrics", ""}, "metrics", `metrics "": names nothing`},
		{[]string{"--p", "0"}, "p", `p "0": want a number p in [1, `},
		{[]string{"--bins", "0"}, "bins", `bins "0": want an integer in [1, 10000]`},
		{[]string{"--ci-level", "0.9"}, "ci-level", "ci-level applies to the bootstrap intervals: add --ci"},
		{[]string{"--bins", "9", "--bin-rule", "sqrt"}, "bins", "bins 9 sets the number of bins of --bin-rule fixed"},
		{[]string{"--mmce-width", "0.2"}, "mmce-width", "mmce-width applies to mmce, and none is computed"},
		{[]string{"--bandwidth", "-1"}, "bandwidth", `bandwidth "-1": want auto`},
		{[]string{"--ks-r", "1,4"}, "ks-r", "ks-r 4: the predictions have K = 3"},
	} {
		f, given := parse(t, Eval, c.args...)
		o, err := f.Options(given, nil)
		if err == nil {
			err = CheckSet(o, loadTest(t))
		}
		var oe *evaluate.OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.HasPrefix(err.Error(), evaluate.ErrOptions.Error()+": "+c.want) {
			t.Errorf("%q: error %v, want an OptionError of %s with %q", c.args, err, c.option, c.want)
		}
	}
}

// TestRegister: every option is a flag of calib eval, and those a stream
// honours of calib-beam, each with its declared default, which Set
// accepts; parsed with no arguments they evaluate as the zero Options do;
// given, they reach StreamOptions.
func TestRegister(t *testing.T) {
	for _, cmd := range []Command{Eval, Beam} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		Register(fs, cmd)
		for _, spec := range evaluate.OptionSpecs() {
			fl := fs.Lookup(spec.Name)
			if (fl != nil) != (cmd == Eval || spec.Stream) {
				t.Errorf("command %d: flag --%s registered %v", cmd, spec.Name, fl != nil)
				continue
			}
			if fl != nil && fl.DefValue != spec.Default && !(spec.Kind == evaluate.FloatOption && spec.Default == "0") {
				t.Errorf("--%s: default %q, declared %q", spec.Name, fl.DefValue, spec.Default)
			}
			var so evaluate.StreamOptions
			if err := so.Set(spec.Name, spec.Default); spec.Default != "" && err != nil {
				t.Errorf("--%s: its default %q: %v", spec.Name, spec.Default, err)
			}
		}
		f, given := parse(t, cmd)
		o, err := f.StreamOptions(given)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.P, evaluate.Exponents{1, 2}) || !slices.Equal(o.KS.R, evaluate.Ranks{1, 2}) || o.Bandwidth != 0 || o.Metrics != nil ||
			o.Bins.Bins != metric.DefaultBins || !o.Mode.All || o.Mode.Notions != nil || o.KSCells != metric.DefaultKSCells || o.MaxCells != 0 || o.EvalPoints != 0 {
			t.Errorf("defaults %+v", o)
		}
		f, given = parse(t, cmd, "--metrics", "ece_kde,ece_bin,ks,brier", "--p", "2", "--bandwidth", "0.1", "--ks-r", "3", "--mode", "top_label", "--bins", "7", "--eval-points", "all")
		if o, err = f.StreamOptions(given); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Metrics, evaluate.MetricSet{evaluate.ECEKDE, evaluate.ECEBin, evaluate.KS, evaluate.Brier}) || !o.Strict || !slices.Equal(o.P, evaluate.Exponents{2}) || o.Bandwidth != 0.1 ||
			!slices.Equal(o.KS.R, evaluate.Ranks{3}) || o.Mode.String() != "top_label" || o.Bins.Bins != 7 || o.EvalPoints != evaluate.AllPoints {
			t.Errorf("given: %+v", o)
		}
		f, given = parse(t, cmd, "--eval-points", "0")
		var oe *evaluate.OptionError
		if _, err := f.StreamOptions(given); !errors.As(err, &oe) || oe.Option != "eval-points" || oe.Err.Error() != `eval-points "0": want a number >= 1, or all` {
			t.Errorf("eval points 0: %v", err)
		}
	}
}
