package calibtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/synth"
)

// The saving of sharing the label-independent work between resamples:
// each pair of benchmarks computes the same B statistics of the embedded
// CIFAR-10 test set (n = 10,000, K = 10) with redrawn labels, once through
// the prepared Statistic (one batch) and once as B separate computations
// by the defining package. ECE^KDE at the LOO bandwidth of each notion.
func BenchmarkResamples(b *testing.B) {
	s, err := demoSet("test")
	if err != nil {
		b.Fatal(err)
	}
	p, k := s.Probs, s.K
	draw := func(nb int) [][]int {
		rng := rand.New(rand.NewPCG(1, 1))
		ys := make([][]int, nb)
		for i := range ys {
			ys[i] = synth.Labels(nil, p, k, rng)
		}
		return ys
	}
	for _, nt := range []kde.Notion{kde.Canonical, kde.TopLabel} {
		cv, err := kde.SelectBandwidth(context.Background(), nt, p, s.Labels, k, nil, kde.BandwidthOptions{})
		if err != nil {
			b.Fatal(err)
		}
		opts := kde.Options{Bandwidth: cv.Bandwidth}
		const nb = 100
		ys := draw(nb)
		b.Run(fmt.Sprintf("ece_kde/%s/B=%d/shared", nt, nb), func(b *testing.B) {
			for b.Loop() {
				st := must(ECEKDEStatistic(context.Background(), nt, p, k, nil, opts))
				must(st(ys))
			}
		})
		b.Run(fmt.Sprintf("ece_kde/%s/B=%d/separate", nt, nb), func(b *testing.B) {
			for b.Loop() {
				for _, y := range ys {
					must(kde.Estimate(context.Background(), nt, p, y, k, nil, opts))
				}
			}
		})
	}
	ys := draw(1000)
	b.Run("ece_bin/B=1000/shared", func(b *testing.B) {
		for b.Loop() {
			must(must(BinnedECEStatistic(p, k, 1, metric.BinOptions{}, 1))(ys))
		}
	})
	b.Run("ece_bin/B=1000/separate", func(b *testing.B) {
		for b.Loop() {
			for _, y := range ys {
				must(metric.TopLabelBins(p, y, k, nil, metric.BinOptions{})).ECE(1)
			}
		}
	})
	b.Run("ks_error/B=1000/shared", func(b *testing.B) {
		for b.Loop() {
			must(must(KSErrorStatistic(p, k, 1))(ys))
		}
	})
	b.Run("ks_error/B=1000/separate", func(b *testing.B) {
		for b.Loop() {
			for _, y := range ys {
				sc, o := metric.TopR(p, y, k, 1)
				metric.KS(sc, o, false, nil)
			}
		}
	})
	// The SKCE U-statistic on the first 2,000 rows.
	p2 := p[:2000*k]
	ys2 := make([][]int, 20)
	for i := range ys2 {
		ys2[i] = ys[i][:2000]
	}
	b.Run("skce/n=2000/B=20/shared", func(b *testing.B) {
		for b.Loop() {
			must(must(SKCEStatistic(p2, k, 0, 0))(ys2))
		}
	})
	b.Run("skce/n=2000/B=20/separate", func(b *testing.B) {
		for b.Loop() {
			for _, y := range ys2 {
				must(SKCE(p2, y, k, SKCEOptions{}))
			}
		}
	})
}

// ClassWise with 99 resamples on calibrated synthetic data sets of the
// size study's largest cells (n = 10,000; K = 10 and 100), one statistic
// and the three of calib test's class-wise rows on the same resamples
// (ClassWiseMany, as Run calls it).
func BenchmarkClassWise(b *testing.B) {
	for _, k := range []int{10, 100} {
		p, y := paperRows(7, 10000, k, true)
		for _, t := range []string{"ks", "spiegelhalter"} {
			b.Run(fmt.Sprintf("%s/n=10000/K=%d/B=99", t, k), func(b *testing.B) {
				for b.Loop() {
					must(ClassWise(context.Background(), t, p, y, k, nil, ConsistencyOptions{Resamples: 99, Seed: 1}))
				}
			})
		}
		b.Run(fmt.Sprintf("ks+kuiper+spiegelhalter/n=10000/K=%d/B=99", k), func(b *testing.B) {
			for b.Loop() {
				must(ClassWiseMany(context.Background(), []string{"ks", "kuiper", "spiegelhalter"}, p, y, k, nil, ConsistencyOptions{Resamples: 99, Seed: 1}))
			}
		})
	}
}
