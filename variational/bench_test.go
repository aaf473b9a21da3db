package variational

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/data"
)

// benchSets are the real test sets the benchmarks fit: n = 10,000 rows of
// CIFAR-10 (K = 10) and CIFAR-100 (K = 100) logits.
var benchSets = []struct{ name, dir string }{
	{"K=10", "cifar10_densenet121-flsd53"},
	{"K=100", "cifar100_resnet110-brier"},
}

func loadBench(b testing.TB, dir string) *data.Set {
	b.Helper()
	d := filepath.Join("..", "testdata", "logits", dir)
	s, err := data.Load(filepath.Join(d, "test_logits.npy"), data.Options{Labels: filepath.Join(d, "test_labels.npy"), Logits: true})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkCrossFit: one family's cross-fit (5 folds) on n = 10,000 rows,
// and auto's (every family's folds and chains in one schedule).
func BenchmarkCrossFit(b *testing.B) {
	for _, bs := range benchSets {
		s := loadBench(b, bs.dir)
		b.Run(bs.name+"/auto", func(b *testing.B) {
			for b.Loop() {
				if _, err := CrossFit(context.Background(), s, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, fam := range AutoFamilies() {
			b.Run(bs.name+"/"+fam.Name, func(b *testing.B) {
				for b.Loop() {
					if _, err := CrossFit(context.Background(), s, Options{Families: []Family{fam}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkError: the first estimate of one family's cross-fit (5 folds,
// n = 10,000 rows) with its interval: the per-row gains, and each fold's
// rows under the next fold's map for the maps' jackknife and optimism
// (kept for the cross-fit's later estimates: dropped each iteration).
func BenchmarkError(b *testing.B) {
	for _, bs := range benchSets {
		s := loadBench(b, bs.dir)
		for _, fam := range AutoFamilies() {
			rc, err := CrossFit(context.Background(), s, Options{Families: []Family{fam}})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(bs.name+"/"+fam.Name, func(b *testing.B) {
				for b.Loop() {
					rc.fits[0].gIn = nil
					if _, err := rc.Error(Options{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
