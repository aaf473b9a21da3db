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

// TestTextParse: Text sets the fields it holds and leaves the others; a
// list of metrics makes Evaluate strict (not with "all"); each error, of
// the parse or of CheckSet against the set, is an OptionError naming its
// option.
func TestTextParse(t *testing.T) {
	text := Text{P: "1", Bandwidth: "0.1", Objective: "reference", Metrics: "ks,ece_kde", Binning: "equal-mass", BinRule: "doane", KSR: "1,2"}
	o := evaluate.Options{Mode: evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical}}, Seed: 7}
	if err := text.Parse(&o); err != nil {
		t.Fatal(err)
	}
	if err := CheckSet(o, loadTest(t)); err != nil {
		t.Fatal(err)
	}
	want := evaluate.Options{Mode: evaluate.NotionSet{Notions: []kde.Notion{kde.Canonical}}, Seed: 7, P: []float64{1}, Bandwidth: 0.1, Objective: kde.Reference, Metrics: evaluate.MetricSet{"ece_kde", "ks"}, Strict: true,
		Bins: metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane}, KS: evaluate.KSOptions{R: []int{1, 2}}}
	if !slices.Equal(o.P, want.P) || o.Bandwidth != want.Bandwidth || o.Objective != want.Objective || !slices.Equal(o.Metrics, want.Metrics) ||
		o.Strict != want.Strict || o.Bins != want.Bins || !slices.Equal(o.KS.R, want.KS.R) || o.Seed != 7 || o.Mode.String() != "canonical" {
		t.Errorf("parsed %+v\nwant %+v", o, want)
	}
	base := Text{P: "1,2", Bandwidth: "auto", Objective: "loo", Binning: "equal_width", BinRule: "fixed", KSR: "1,2"}
	if o := (evaluate.Options{}); base.Parse(&o) != nil || o.Metrics != nil || o.Strict {
		t.Errorf("no metrics: %+v", o)
	}
	all := base
	all.Metrics = "brier, all"
	if o := (evaluate.Options{}); all.Parse(&o) != nil || !slices.Equal(o.Metrics, evaluate.Metrics) || o.Strict {
		t.Errorf("all: %+v", o)
	}
	for _, c := range []struct {
		edit   func(*Text, *evaluate.Options)
		option string
		want   string
	}{
		{func(t *Text, _ *evaluate.Options) { t.Mode = "nope" }, "mode", "mode: unknown notion"},
		{func(t *Text, _ *evaluate.Options) { t.Mode = "binary" }, "mode", "mode: the binary notion needs one-column input"},
		{func(t *Text, _ *evaluate.Options) { t.Objective = "x" }, "bandwidth-objective", "bandwidth-objective: unknown bandwidth objective"},
		{func(t *Text, _ *evaluate.Options) { t.Binning = "x" }, "binning", "binning: unknown binning"},
		{func(t *Text, _ *evaluate.Options) { t.BinRule = "x" }, "bin-rule", "bin-rule: unknown bin rule"},
		{func(t *Text, _ *evaluate.Options) { t.Metrics = "x" }, "metrics", "metrics: unknown metric"},
		{func(t *Text, _ *evaluate.Options) { t.P = "0" }, "p", `p "0": each p must be`},
		{func(t *Text, _ *evaluate.Options) { t.Bandwidth = "-1" }, "bandwidth", `bandwidth "-1": want auto`},
		{func(t *Text, _ *evaluate.Options) { t.KSR = "1,4" }, "ks-r", "ks-r 4: the predictions have K = 3"},
	} {
		tx, o := base, evaluate.Options{}
		c.edit(&tx, &o)
		err := tx.Parse(&o)
		if err == nil {
			err = CheckSet(o, loadTest(t))
		}
		var oe *evaluate.OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !strings.HasPrefix(err.Error(), evaluate.ErrOptions.Error()+": "+c.want) {
			t.Errorf("error %v, want an OptionError of %s with %q", err, c.option, c.want)
		}
	}
}

// TestRegister: the shared flags bind on the standard library's flag set
// (as calib-beam's), with calib eval's defaults: parsed with no arguments
// they evaluate as the zero Options do; given, they reach Options.
func TestRegister(t *testing.T) {
	for _, cmd := range []Command{Eval, Beam} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		var text Text
		var st StreamText
		var o evaluate.Options
		Register(fs, &text, &o, cmd)
		RegisterStream(fs, &st, "")
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		text.Objective = "loo"
		if err := text.Parse(&o); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.P, evaluate.Exponents{1, 2}) || !slices.Equal(o.KS.R, evaluate.Ranks{1, 2}) || o.Bandwidth != 0 || o.Metrics != nil ||
			o.Bins.Bins != metric.DefaultBins || !o.Mode.All || o.Mode.Notions != nil || st.KSCells != metric.DefaultKSCells || st.MaxCells != 0 {
			t.Errorf("defaults %+v, %+v", o, st)
		}
		if m, err := st.Points(); err != nil || m != 0 {
			t.Errorf("eval points %d, %v", m, err)
		}
		args := []string{"--metrics", "ks,brier", "--p", "2", "--bandwidth", "0.1", "--ks-r", "3", "--mode", "top_label", "--class-mean", "--bins", "7", "--eval-points", "all"}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if err := text.Parse(&o); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Metrics, evaluate.MetricSet{evaluate.KS, evaluate.Brier}) || !o.Strict || !slices.Equal(o.P, evaluate.Exponents{2}) || o.Bandwidth != 0.1 ||
			!slices.Equal(o.KS.R, evaluate.Ranks{3}) || o.Mode.String() != "top_label" || !o.ClassMean || o.Bins.Bins != 7 {
			t.Errorf("given: %+v", o)
		}
		if m, err := st.Points(); err != nil || m != evaluate.AllPoints {
			t.Errorf("eval points all: %d, %v", m, err)
		}
		st.EvalPoints = "0"
		var oe *evaluate.OptionError
		if _, err := st.Points(); !errors.As(err, &oe) || oe.Option != "eval-points" || oe.Err.Error() != `eval-points "0": want a number >= 1, or all` {
			t.Errorf("eval points 0: %v", err)
		}
	}
}
