package evaluate

import (
	"context"
	"errors"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// fixedWarned reports whether Evaluate warns that the fixed bandwidth h is
// off for notion.
func fixedWarned(t *testing.T, s *data.Set, notion kde.Notion, h float64) bool {
	t.Helper()
	ev, err := Evaluate(context.Background(), s, Options{Metrics: MetricSet{"ece_kde"}, Mode: NotionSet{Notions: []kde.Notion{notion}}, Bandwidth: Bandwidth(h), P: []float64{1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Results {
		for _, w := range r.Warnings {
			var wr *Warning
			if errors.As(w, &wr) && wr.Kind == FixedBandwidthOff {
				return true
			}
		}
	}
	return false
}

// fullCheck is the check on every point (the sweep it replaced): the
// leave-one-out log-likelihood per sample at h/10 or 10h beats h's by more
// than fixedSupportGap.
func fullCheck(t *testing.T, s *data.Set, notion kde.Notion, h float64) bool {
	t.Helper()
	cv, err := kde.SelectBandwidth(context.Background(), notion, s.Probs, s.Labels, s.K, s.Weights, kde.BandwidthOptions{Grid: []float64{h / 10, h, 10 * h}, NoRefine: true})
	if err != nil {
		t.Fatal(err)
	}
	n := float64(s.N - cv.Excluded)
	return cv.Index != 1 && (cv.GridLL[cv.Index]-cv.GridLL[1])/n > fixedSupportGap
}

// TestFixedBandwidthCheckSampled: the sampled check (a subsample grown
// until it decides) warns exactly where the check on every point does, on
// 3,000 real CIFAR-10 predictions, over bandwidths from far too small to
// far too large for canonical, top-label and marginal (a case with a gap
// of 0.3 at n = 10,000, near the threshold, among them).
func TestFixedBandwidthCheckSampled(t *testing.T) {
	d, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	n := 3000
	s := &data.Set{N: n, K: d.K, Probs: d.Probs[:n*d.K], Labels: d.Labels[:n]}
	warned := 0
	for _, notion := range []kde.Notion{kde.Canonical, kde.TopLabel, kde.ClassWise} {
		for _, h := range []float64{1e-5, 1e-4, 1e-3, 0.01, 0.05, 0.3} {
			want := fullCheck(t, s, notion, h)
			if got := fixedWarned(t, s, notion, h); got != want {
				t.Errorf("%s, h = %g: warned %v, the check on every point %v", notion, h, got, want)
			}
			if want {
				warned++
			}
		}
	}
	if warned < 5 || warned > 13 {
		t.Errorf("%d of 18 cases warned: the cases do not test both outcomes", warned)
	}
}
