package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/smooth"
)

// TestNewMetricsIdentityResample: the bootstrap statistic of every entry
// of smece, ece_sweep, atb, tce, ace, ece_bin, mce and ece_variational
// (under the conventions that change them),
// run on the resample that draws every row once, gives the entry's value:
// a statistic that computed something else (another grid, another view,
// counts read wrongly) would move the centred interval.
func TestNewMetricsIdentityResample(t *testing.T) {
	s, err := demoSet("val")
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, s.N)
	for i := range idx {
		idx[i] = i
	}
	for _, o := range []Options{
		{Metrics: MetricSet{SmECE, ECESweep, ATB, TCE, ACE, ECEBin, MCE, ECEVariational}},
		{Metrics: MetricSet{SmECE, ECESweep, ECEBin, MCE}, Convention: convention.RobustnessMetrics},
		{Metrics: MetricSet{SmECE, ECEBin, MCE}, Convention: convention.Netcal, SmECE: smooth.Options{Convention: smooth.Relplot101}},
		{Metrics: MetricSet{ECEBin, MCE}, Convention: convention.Torchmetrics},
		{Metrics: MetricSet{ECEBin, MCE}, Convention: convention.Hendrycks},
	} {
		c, err := o.resolve(s)
		if err != nil {
			t.Fatal(err)
		}
		ev := &evaluator{ctx: context.Background(), cfg: c, set: s, bandwidths: map[kde.Notion]*chosenBandwidth{}}
		checked := 0
		for _, m := range c.metrics {
			entries, err := lookupDef(m).compute(ev)
			if err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			for _, e := range entries {
				stat := ev.stats[e]
				if e.Error != "" || stat == nil {
					t.Errorf("%s %s %+v: no value or no statistic: %s", m, e.Notion, e.Key(), e.Error)
					continue
				}
				v, err := stat(idx)
				if err != nil {
					t.Fatalf("%s: %v", m, err)
				}
				if want := float64(*e.Value); math.Abs(v-want) > 1e-12*math.Abs(want)+1e-15 {
					t.Errorf("convention %q: %s %s %+v: statistic on every row %.17g, value %.17g", o.Convention, m, e.Notion, e.Key(), v, want)
				}
				checked++
			}
		}
		if checked < 5 {
			t.Errorf("%+v: %d entries checked", o.Metrics, checked)
		}
	}
}

// TestResultOnlyMetricsRoundTrip: an evaluation with the entries only
// Results carry (atb_debiased) reads back from its JSON.
func TestResultOnlyMetricsRoundTrip(t *testing.T) {
	s, err := demoSet("val")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{ATB, ACE, ECEVariational}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, ev); err != nil {
		t.Fatal(err)
	}
	var back Evaluation
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if e := back.Lookup(Key{Metric: ATBDebiased, Notion: "top_label", P: 2}); e == nil || e.Value == nil {
		t.Errorf("atb_debiased not read back: %+v", e)
	}
	if e := back.Lookup(Key{Metric: ACE, Notion: "class_wise", P: 1, Variant: "robustness_metrics/tace"}); e == nil || *e.Threshold != 0.01 {
		t.Errorf("ace TACE not found by its key: %+v", e)
	}
	seen := map[Key]bool{}
	for _, e := range back.Results {
		if seen[e.Key()] {
			t.Errorf("two entries with key %+v", e.Key())
		}
		seen[e.Key()] = true
	}
}
