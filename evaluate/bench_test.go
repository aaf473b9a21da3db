package evaluate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/testenv"
	"github.com/calib-dev/calib/kde"
)

// imageNetSize returns n predictions of K classes with CIFAR-like
// sharpness: softmax of logits 3 z (z ~ N(0, 1)) with the true class raised
// by 15 (mean top probability about 0.96), the label replaced by a uniform
// one for 5 % of the rows, from a fixed seed.
func imageNetSize(b *testing.B, n, k int) *data.Set {
	b.Helper()
	logits, labels := synthLogits(rand.New(rand.NewPCG(50000, 1000)), n, k, 15, 0.05)
	s, err := data.New(logits, k, labels, true, data.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// synthLogits draws n rows of K = k logits 3 z (z ~ N(0, 1)) with the
// true class raised by boost, the label then replaced by a uniform one
// with probability noise.
func synthLogits(rng *rand.Rand, n, k int, boost, noise float64) ([]float64, []int) {
	logits, labels := make([]float64, n*k), make([]int, n)
	for j := 0; j < n; j++ {
		y := rng.IntN(k)
		z := logits[j*k : (j+1)*k]
		for m := range z {
			z[m] = 3 * rng.NormFloat64()
		}
		z[y] += boost
		labels[j] = y
		if rng.Float64() < noise {
			labels[j] = rng.IntN(k)
		}
	}
	return logits, labels
}

// BenchmarkImageNetSize evaluates an ImageNet-size set (n = 50,000, K =
// 1,000, synthetic, see imageNetSize): ECE^KDE canonical and top-label at
// the fixed bandwidth h = 0.02 (p = 1 and 2), and the binned and KS
// metrics. It needs CALIB_THOROUGH=1 (the canonical case takes minutes);
// run it with -benchtime 1x.
func BenchmarkImageNetSize(b *testing.B) {
	if !testenv.Thorough() {
		b.Skip("CALIB_THOROUGH=1 runs the n = 50,000, K = 1,000 evaluation")
	}
	const n, k = 50000, 1000
	set := imageNetSize(b, n, k)
	cases := []struct {
		name string
		opt  Options
	}{
		{"ece_kde/canonical", Options{Metrics: MetricSet{"ece_kde"}, Mode: NotionSet{Notions: []kde.Notion{kde.Canonical}}, Bandwidth: 0.02, NoBandwidthCheck: true, Strict: true}},
		{"ece_kde/top_label", Options{Metrics: MetricSet{"ece_kde"}, Mode: NotionSet{Notions: []kde.Notion{kde.TopLabel}}, Bandwidth: 0.02, NoBandwidthCheck: true, Strict: true}},
		{"binned_ks", Options{Metrics: MetricSet{"ece_bin", "mce", "ece_bin_debiased", "ks"}, Strict: true}},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/n=%d/K=%d", c.name, n, k), func(b *testing.B) {
			for b.Loop() {
				if _, err := Evaluate(context.Background(), set, c.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*(n-1)), "ns/pair")
		})
	}
}
