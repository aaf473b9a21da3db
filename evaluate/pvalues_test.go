package evaluate

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/synth"
)

// --p-values: every entry of the tested metrics gets a p-value in (0, 1]
// with its method and resamples, the scores none; the ece_bin top-label
// and ECE^KDE canonical p-values are calibtest.Consistency's with the same
// statistic, resamples and seed (the same draws: equal bit for bit); 1 and
// 3 workers give the same evaluation; a stream refuses p-values.
func TestPValues(t *testing.T) {
	s := loadTest(t)
	o := Options{Metrics: MetricSet{"ece_kde", "ece_bin", "ks", "mmce", "brier"}, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical, kde.TopLabel}}, PValues: true, PValueResamples: 99, Seed: 3, Workers: 1}
	ev, err := Evaluate(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ev.Results {
		switch e.Metric {
		case "brier":
			if e.PValue != nil {
				t.Errorf("brier has a p-value")
			}
		default:
			if e.PValue == nil || !(*e.PValue > 0 && *e.PValue <= 1) || e.PValueMethod == "" || e.PValueResamples == nil || *e.PValueResamples != 99 {
				t.Errorf("%s %s: p-value %v, method %q, resamples %v", e.Metric, e.Notion, e.PValue, e.PValueMethod, e.PValueResamples)
			}
		}
	}
	co := calibtest.ConsistencyOptions{Resamples: 99, Seed: 3}
	st, err := calibtest.BinnedECEStatistic(s.Probs, s.K, 1, metric.BinOptions{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := calibtest.Consistency(context.Background(), s.Probs, s.Labels, s.K, st, co)
	if err != nil {
		t.Fatal(err)
	}
	var bin, kdeCan *Result
	for _, e := range ev.Results {
		if e.Metric == "ece_bin" && e.Notion == "top_label" && *e.P == 1 {
			bin = e
		}
		if e.Metric == "ece_kde" && e.Notion == "canonical" && *e.P == 1 {
			kdeCan = e
		}
	}
	if float64(*bin.PValue) != want.P {
		t.Errorf("ece_bin top_label p = 1: p-value %v, calibtest %v", *bin.PValue, want.P)
	}
	kst, err := calibtest.ECEKDEStatistic(context.Background(), kde.Canonical, s.Probs, s.K, nil, kde.Options{Bandwidth: *kdeCan.Bandwidth})
	if err != nil {
		t.Fatal(err)
	}
	kw, err := calibtest.Consistency(context.Background(), s.Probs, s.Labels, s.K, kst, co)
	if err != nil {
		t.Fatal(err)
	}
	if float64(*kdeCan.PValue) != kw.P {
		t.Errorf("ece_kde canonical p = 1: p-value %v, calibtest %v", *kdeCan.PValue, kw.P)
	}
	o.Workers = 3
	ev3, err := Evaluate(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ev.Results {
		if !reflect.DeepEqual(e.PValue, ev3.Results[i].PValue) {
			t.Errorf("%s %s: %v with 1 worker, %v with 3", e.Metric, e.Notion, e.PValue, ev3.Results[i].PValue)
		}
	}
	if _, err := (StreamOptions{Options: Options{PValues: true}}).resolve(); !errors.Is(err, ErrOptions) {
		t.Errorf("stream with p-values: %v", err)
	}
	if _, err := Evaluate(context.Background(), s, Options{PValues: true, PValueResamples: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("-1 resamples: %v", err)
	}
}

// The ks p-values' statistics (scores sorted once) equal the ks metric
// recomputed from scratch, bit for bit, on the observed labels and on
// redrawn ones, with and without weights.
func TestKSStatistics(t *testing.T) {
	s := loadTest(t)
	rng := rand.New(rand.NewPCG(1, 2))
	y2 := synth.Labels(nil, s.Probs, s.K, rng)
	for _, weighted := range []bool{false, true} {
		set := *s
		if weighted {
			set.Weights = make([]float64, s.N)
			for i := range set.Weights {
				set.Weights[i] = 0.5 + rng.Float64()
			}
		}
		c, err := Options{Metrics: MetricSet{"ks"}, KS: KSOptions{R: []int{1, 2, 3}}}.resolve(&set)
		if err != nil {
			t.Fatal(err)
		}
		ev := &evaluator{ctx: context.Background(), cfg: c, set: &set}
		entries, err := ev.ks()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.ksStatistics(entries)([][]int{set.Labels, y2})
		if err != nil {
			t.Fatal(err)
		}
		other := set
		other.Labels = y2
		want, err := (&evaluator{ctx: context.Background(), cfg: c, set: &other}).ks()
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			if got[0][i] != float64(*e.Value) || got[1][i] != float64(*want[i].Value) {
				t.Errorf("weighted=%v %s r=%v: %v %v, recomputed %v %v", weighted, e.Notion, e.R, got[0][i], got[1][i], *e.Value, *want[i].Value)
			}
		}
	}
}
