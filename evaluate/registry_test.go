package evaluate

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/notion"
)

// TestRegistry: every metric of the table is whole (computed, an interval
// rule, definition keys), once, and the lists derived from it say what
// the table says.
func TestRegistry(t *testing.T) {
	seen := map[Metric]bool{}
	for _, d := range metricTable {
		if d.compute == nil || d.interval == nil || d.define == nil {
			t.Errorf("%s: missing a part", d.name)
		}
		if seen[d.name] {
			t.Errorf("%s registered twice", d.name)
		}
		seen[d.name] = true
	}
	var tested MetricSet
	for _, d := range metricTable {
		if d.pValues != nil {
			tested = append(tested, d.name)
		}
	}
	if want := (MetricSet{ECEKDE, ECEBin, MCE, ECEBinDebiased, KS, MMCE}); !slices.Equal(tested, want) {
		t.Errorf("metrics with p-values %v, want %v (Options.PValues)", tested, want)
	}
	for _, m := range DefaultMetrics {
		if !seen[m] {
			t.Errorf("default metric %s not registered", m)
		}
	}
	if got := len(Metrics); got != 18 {
		t.Errorf("%d metrics, want 18", got)
	}
	notStreamed := MetricSet{ECESweep, ATB, TCE, ACE}
	want := slices.DeleteFunc(slices.Clone(Metrics), notStreamed.Has)
	// A stream's defaults are the in-memory ones.
	if !slices.Equal(streamable, want) || !slices.Equal(streamMetrics, DefaultMetrics) || streamMetrics[0] != Headline.Metric {
		t.Errorf("streamable %v, stream defaults %v", streamable, streamMetrics)
	}
}

// TestMetricSetText: a MetricSet reads and writes the --metrics text.
func TestMetricSetText(t *testing.T) {
	var ms MetricSet
	if err := ms.UnmarshalText([]byte(" ks,brier, ks ")); err != nil || !slices.Equal(ms, MetricSet{KS, Brier}) {
		t.Errorf("UnmarshalText: %v, %v", ms, err)
	}
	if b, _ := ms.MarshalText(); string(b) != "ks,brier" {
		t.Errorf("MarshalText %q", b)
	}
	if err := ms.UnmarshalText([]byte("all")); err != nil || !slices.Equal(ms, Metrics) {
		t.Errorf("all: %v, %v", ms, err)
	}
	var m Metric
	err := m.UnmarshalText([]byte("ece"))
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Option != "metrics" || !errors.Is(err, ErrOptions) ||
		err.Error() != `evaluate: bad options: metrics: unknown metric "ece" (valid: ece_variational, ece_kde, ece_witness, smece, ece_bin, mce, ece_sweep, atb, tce, ace, ece_bin_debiased, ks, sharpness, mmce, brier, nll, accuracy, confidence, all)` {
		t.Errorf("unknown metric: %v", err)
	}
}

// TestOptionErrorNamesTheOption: the errors of bad options say which
// option, as calib eval spells it.
func TestOptionErrorNamesTheOption(t *testing.T) {
	s, err := demoSet("val")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o      Options
		option string
	}{
		{Options{P: []float64{0.5}}, "p"},
		{Options{Metrics: MetricSet{"nope"}}, "metrics"},
		{Options{Mode: NotionSet{Notions: []kde.Notion{kde.Binary}}, Metrics: MetricSet{ECEKDE}}, "mode"},
		{Options{KS: KSOptions{R: []int{0}}}, "ks-r"},
		{Options{Bandwidth: -1}, "bandwidth"},
		{Options{MMCE: MMCEOptions{Width: -1}}, "mmce-width"},
		{Options{CI: true, Level: 2}, "ci-resamples"},
	} {
		_, err = Evaluate(context.Background(), s, c.o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v, want an OptionError of %s", c.o, err, c.option)
		}
	}
}

// TestLookup: Lookup finds each entry by its key, and nothing for a key
// not computed.
func TestLookup(t *testing.T) {
	s, err := demoSet("val")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{ECEBin, KS, Brier}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ev.Results {
		if got := ev.Lookup(e.Key()); got != e {
			t.Errorf("Lookup(%+v) = %p, want %p", e.Key(), got, e)
		}
	}
	for _, k := range []Key{
		{Metric: ECEBin, Notion: "top_label", P: 1},
		{Metric: KS, Notion: "within_top_r", R: 2},
		{Metric: Brier},
	} {
		if e := ev.Lookup(k); e == nil || e.Value == nil || e.Metric != k.Metric {
			t.Errorf("Lookup(%+v) = %v", k, e)
		}
	}
	for _, k := range []Key{{Metric: ECEBin, Notion: "top_label", P: 3}, {Metric: KS, Notion: "top_r"}, {Metric: NLL}} {
		if e := ev.Lookup(k); e != nil {
			t.Errorf("Lookup(%+v) = %+v, want nil", k, e)
		}
	}
}

// TestNotionSet: the text forms of a mode and what each resolves to; an
// empty list, an unknown notion and binary for K columns are refused.
func TestNotionSet(t *testing.T) {
	k3, k30, bin := &data.Set{K: 3}, &data.Set{K: 30}, &data.Set{K: 2, Binary: true}
	for _, c := range []struct {
		text   string
		s      *data.Set
		want   []kde.Notion
		string string
	}{
		{"", k3, []kde.Notion{kde.Canonical, kde.ClassWise, kde.TopLabel}, "all"},
		{"all", k3, []kde.Notion{kde.Canonical, kde.ClassWise, kde.TopLabel}, "all"},
		{"all", k30, []kde.Notion{kde.Canonical, kde.TopLabel}, "all"},
		{"all, marginal", k30, []kde.Notion{kde.Canonical, kde.TopLabel, kde.ClassWise}, "all,class_wise"},
		{"all", bin, []kde.Notion{kde.Binary, kde.TopLabel}, "all"},
		{"top-label,canonical,top_label", k3, []kde.Notion{kde.TopLabel, kde.Canonical}, "top_label,canonical"},
		{"class_wise", nil, []kde.Notion{kde.ClassWise}, "class_wise"},
		{"all", nil, []kde.Notion{kde.Canonical}, "all"},
	} {
		var ns NotionSet
		if err := ns.UnmarshalText([]byte(c.text)); err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		got, _, err := ns.Resolve(c.s)
		if err != nil || !slices.Equal(got, c.want) || ns.String() != c.string {
			t.Errorf("%q: %v (%q), %v; want %v (%q)", c.text, got, ns.String(), err, c.want, c.string)
		}
	}
	if (NotionSet{}).String() != "all" || (NotionSet{All: true}).String() != "all" || (NotionSet{All: true}).IsZero() {
		t.Error("all")
	}
	for _, ns := range []NotionSet{{Notions: []kde.Notion{kde.Notion("nope")}}, {Notions: []kde.Notion{kde.Binary}}} {
		var oe *OptionError
		if _, _, err := ns.Resolve(k3); !errors.As(err, &oe) || oe.Option != "mode" {
			t.Errorf("%v: %v", ns, err)
		}
	}
	var ns NotionSet
	for _, text := range []string{"sideways", " , "} {
		if err := ns.UnmarshalText([]byte(text)); err == nil {
			t.Errorf("%q accepted", text)
		}
	}
}

// TestModeNamesChecked: Evaluate and Stream refuse the same NotionSets
// built in Go with names that are not notions ("all" is the All field, not
// a name), and an empty Notions is the zero value.
func TestModeNamesChecked(t *testing.T) {
	s := loadTest(t)
	for _, ns := range []NotionSet{{Notions: []kde.Notion{"all"}}, {All: true, Notions: []kde.Notion{""}}, {Notions: []kde.Notion{"marginal"}}} {
		var oe *OptionError
		if _, err := Evaluate(context.Background(), s, Options{Mode: ns, Metrics: MetricSet{ECEKDE}}); !errors.As(err, &oe) || oe.Option != "mode" {
			t.Errorf("Evaluate, mode %#v: %v", ns, err)
		}
		if _, err := Stream(context.Background(), data.SetSource(s, 100), StreamOptions{Options: Options{Mode: ns, Metrics: MetricSet{ECEKDE}}}); !errors.As(err, &oe) || oe.Option != "mode" {
			t.Errorf("Stream, mode %#v: %v", ns, err)
		}
	}
	if empty := (NotionSet{Notions: []kde.Notion{}}); !empty.IsZero() || empty.String() != "all" || modeText(empty) != "" {
		t.Errorf("an empty Notions: zero %v, text %q", empty.IsZero(), empty.String())
	}
}

// TestGroupOfEntries: an entry's output group follows from its notion; a
// score keeps its group when its interval failed, and a metric that failed
// as a whole (no notion, no value) is listed first.
func TestGroupOfEntries(t *testing.T) {
	v := data.Float(0.5)
	for _, c := range []struct {
		e    Result
		want int
	}{
		{Result{Metric: ECEBin, Notion: notion.ClassWise}, groupClassWise},
		{Result{Metric: KS, Notion: notion.WithinTopR}, groupTopLabel},
		{Result{Metric: Sharpness, Notion: notion.Binary}, groupBinary},
		{Result{Metric: Brier, Value: &v}, groupScores},
		{Result{Metric: Brier, Value: &v, Error: "no interval"}, groupScores},
		{Result{Metric: ECEWitness, Error: "too few samples"}, groupCanonical},
	} {
		if got := c.e.group(); got != c.want {
			t.Errorf("%+v: group %d, want %d", c.e, got, c.want)
		}
	}
}
