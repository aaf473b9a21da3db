package metric

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchScores draws n scores with outcomes from an over-confident model.
func benchScores(n int) (s, o []float64) {
	r := rand.New(rand.NewPCG(11, 12))
	s, o = make([]float64, n), make([]float64, n)
	for i := range s {
		s[i] = 0.5 + 0.5*r.Float64()
		if r.Float64() < s[i]-0.05 {
			o[i] = 1
		}
	}
	return s, o
}

// BenchmarkSweepATBTCE: the monotonic sweep (both binnings), ATB and
// TCE (PAVA bins of n/20 to n/5) on n scores.
func BenchmarkSweepATBTCE(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		s, o := benchScores(n)
		b.Run(fmt.Sprintf("sweep/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				for _, bn := range []Binning{EqualWidth, EqualMass} {
					if _, _, err := SweepECE(s, o, nil, bn, 1); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(fmt.Sprintf("atb/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := ATB(s, o, nil, 2); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tce/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := TCE(s, o, TCEOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
