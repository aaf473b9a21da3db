package evaluate

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/calib-dev/calib/kde"
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
		if d.streamed && d.finish == nil {
			t.Errorf("%s streamed by default without a streamed part", d.name)
		}
	}
	for _, m := range DefaultMetrics {
		if !seen[m] {
			t.Errorf("default metric %s not registered", m)
		}
	}
	if got := len(Metrics); got != 12 {
		t.Errorf("%d metrics, want 12", got)
	}
	if !slices.Equal(streamable, append(MetricSet{ECEKDE, ECEWitness}, Metrics[2:]...)) || streamMetrics.Has(ECEWitness) || len(streamMetrics) != 11 {
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
		err.Error() != `evaluate: bad options: metrics: unknown metric "ece" (valid: ece_kde, ece_witness, ece_bin, mce, ece_bin_debiased, ks, sharpness, mmce, brier, nll, accuracy, confidence, all)` {
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
		{Options{Mode: NotionSet{kde.Binary}, Metrics: MetricSet{ECEKDE}}, "mode"},
		{Options{KSR: []int{0}}, "ks-r"},
		{Options{Bandwidth: -1}, "bandwidth"},
		{Options{MMCEWidth: -1}, "mmce-width"},
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
