package calibtest

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The two series of each law agree where both converge (to 1e-12), and the
// means, the integrals of the tails, are the closed forms sqrt(pi/2) for
// max |B| and 2 sqrt(2/pi) for the range (Feller 1951) to 1e-9.
func TestLaws(t *testing.T) {
	for x := 0.7; x <= 2.5; x += 0.1 {
		if d := math.Abs(1 - ksCDF(x) - ksTail(x)); d > 1e-12 {
			t.Errorf("max|B| at %.1f: 1 - CDF %v, tail %v", x, 1-ksCDF(x), ksTail(x))
		}
	}
	for x := 1.2; x <= 3.5; x += 0.1 {
		if d := math.Abs(1 - kuiperCDF(x) - kuiperTail(x)); d > 1e-12 {
			t.Errorf("range at %.1f: 1 - CDF %v, tail %v", x, 1-kuiperCDF(x), kuiperTail(x))
		}
	}
	// Simpson on [0, 12] (the tails are below 1e-30 past it).
	integral := func(f func(float64) float64) float64 {
		const n = 24000
		h := 12.0 / n
		s := f(0) + f(12)
		for i := 1; i < n; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			s += w * f(float64(i)*h)
		}
		return s * h / 3
	}
	if m := integral(KSPValue); math.Abs(m-math.Sqrt(math.Pi/2)) > 1e-9 {
		t.Errorf("E max|B| = %.12f, want %.12f", m, math.Sqrt(math.Pi/2))
	}
	if m := integral(KuiperPValue); math.Abs(m-2*math.Sqrt(2/math.Pi)) > 1e-9 {
		t.Errorf("E range = %.12f, want %.12f", m, 2*math.Sqrt(2/math.Pi))
	}
	// Monotone, in [0, 1], small tails keep relative accuracy.
	for _, f := range []func(float64) float64{KSPValue, KuiperPValue} {
		prev := 1.0
		for x := 0.0; x < 12; x += 0.01 {
			p := f(x)
			if !(p >= 0 && p <= prev+1e-15) {
				t.Fatalf("p(%v) = %v after %v", x, p, prev)
			}
			prev = p
		}
		if p := f(10); !(p > 0 && p < 1e-20) {
			t.Errorf("p(10) = %v", p)
		}
	}
	// The tail of max|B| is 4 Q(x) to first order.
	if p, q := KSPValue(6), 4*upper(6); math.Abs(p/q-1) > 1e-12 {
		t.Errorf("p(6) = %v, 4 Q(6) = %v", p, q)
	}
	if !math.IsNaN(KSPValue(math.NaN())) || KuiperPValue(-1) != 1 {
		t.Error("NaN or negative argument")
	}
}

// A hand case: the cumulative differences at the ends of runs of equal
// scores (the order of tied rows does not matter), sigma, the statistics
// and Spiegelhalter's z against hand arithmetic.
func TestHandCase(t *testing.T) {
	s := []float64{0.5, 0.9, 0.2, 0.5}
	o := []float64{1, 1, 0, 0}
	got, err := Cumulative(s, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted: 0.2 (0), 0.5 (1), 0.5 (0), 0.9 (1); sums -0.2, -0.2 (after
	// the tie), -0.1; divided by W = 4.
	sigma := math.Sqrt(0.16+0.25+0.25+0.09) / 4
	want := CumulativeResult{N: 4, Sigma: sigma, MaxAbs: 0.05, Range: 0.05, KS: 0.05 / sigma, Kuiper: 0.05 / sigma}
	want.KSP, want.KuiperP = KSPValue(want.KS), KuiperPValue(want.Kuiper)
	for _, c := range [][2]float64{{got.Sigma, want.Sigma}, {got.MaxAbs, want.MaxAbs}, {got.Range, want.Range}, {got.KS, want.KS}, {got.Kuiper, want.Kuiper}, {got.KSP, want.KSP}, {got.KuiperP, want.KuiperP}} {
		if math.Abs(c[0]-c[1]) > 1e-15 {
			t.Errorf("%+v, want %+v", *got, want)
			break
		}
	}
	swapped, _ := Cumulative([]float64{0.5, 0.9, 0.2, 0.5}, []float64{0, 1, 0, 1}, nil)
	if *swapped != *got {
		t.Errorf("tied rows in another order: %+v", *swapped)
	}
	// Weights 2 on every row: the same statistics.
	w2, _ := Cumulative(s, o, []float64{2, 2, 2, 2})
	if math.Abs(w2.KS-got.KS) > 1e-15 || math.Abs(w2.Kuiper-got.Kuiper) > 1e-15 {
		t.Errorf("uniform weights changed the statistics: %+v", *w2)
	}
	sp, err := Spiegelhalter(s, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	z := (-0.2*0.6 + 0.1*-0.8) / math.Sqrt(0.36*0.16+0.64*0.09)
	if math.Abs(sp.Z-z) > 1e-15 || math.Abs(sp.P-math.Erfc(math.Abs(z)/math.Sqrt2)) > 1e-15 {
		t.Errorf("z %v p %v, want %v", sp.Z, sp.P, z)
	}
	for _, bad := range [][3][]float64{
		{{0.5, 1.2}, {0, 1}, nil},
		{{0.5, 0.2}, {0.5, 1}, nil},
		{{0.5}, {0, 1}, nil},
		{{0.5, 0.2}, {0, 1}, {1, -1}},
		{{}, {}, nil},
	} {
		if _, err := Cumulative(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("%v: no error", bad)
		}
		if _, err := Spiegelhalter(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := Cumulative([]float64{0, 1}, []float64{0, 1}, nil); !errors.Is(err, ErrNoVariance) {
		t.Errorf("scores 0 and 1: %v", err)
	}
}

// Holm's adjusted p-values on a hand family (NaN left out).
func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, math.NaN(), 0.03, 0.005})
	want := []float64{0.03, 0.06, math.NaN(), 0.06, 0.02}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) < 1e-15 || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("Holm = %v, want %v", got, want)
		}
	}
	if g := Holm([]float64{0.5, 0.9}); !slices.Equal(g, []float64{1, 1}) {
		t.Errorf("Holm = %v", g)
	}
}

// On calibrated data (outcomes drawn from the scores) the p-values of the
// three tests are uniform: the Kolmogorov-Smirnov distance of 200 p-values
// (n = 2,000 each, fixed seeds) to the uniform law is below its 1 %
// critical value 1.63 / sqrt(200); on overconfident data (outcomes from
// 0.5 + 0.6 (s - 0.5), reported s) every p-value at n = 2,000 is below
// 0.01.
func TestSizeAndPower(t *testing.T) {
	const sets, n = 200, 2000
	ps := make([][]float64, 3)
	sc, oc := make([]float64, n), make([]float64, n)
	for d := 0; d < sets; d++ {
		rng := rand.New(rand.NewPCG(uint64(d), 77))
		for i := range sc {
			sc[i] = rng.Float64()
			oc[i] = 0
			if rng.Float64() < sc[i] {
				oc[i] = 1
			}
		}
		c, err := Cumulative(sc, oc, nil)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := Spiegelhalter(sc, oc, nil)
		if err != nil {
			t.Fatal(err)
		}
		ps[0], ps[1], ps[2] = append(ps[0], c.KSP), append(ps[1], c.KuiperP), append(ps[2], sp.P)
	}
	for i, name := range []string{"ks", "kuiper", "spiegelhalter"} {
		if d := uniformDistance(ps[i]); d > 1.63/math.Sqrt(sets) {
			t.Errorf("%s: KS distance of %d null p-values to uniform %.3f > %.3f", name, sets, d, 1.63/math.Sqrt(sets))
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range sc {
		sc[i] = rng.Float64()
		oc[i] = 0
		if rng.Float64() < 0.5+0.6*(sc[i]-0.5) {
			oc[i] = 1
		}
	}
	c, _ := Cumulative(sc, oc, nil)
	sp, _ := Spiegelhalter(sc, oc, nil)
	if !(c.KSP < 0.01 && c.KuiperP < 0.01 && sp.P < 0.01) {
		t.Errorf("miscalibrated: p = %v, %v, %v", c.KSP, c.KuiperP, sp.P)
	}
}

// uniformDistance returns the Kolmogorov-Smirnov distance of the p-values
// to the uniform law on [0, 1] (they are sorted in place).
func uniformDistance(ps []float64) float64 {
	slices.Sort(ps)
	m, d := float64(len(ps)), 0.0
	for j, v := range ps {
		d = math.Max(d, math.Max(math.Abs(float64(j+1)/m-v), math.Abs(v-float64(j)/m)))
	}
	return d
}

// Run with weights and the default tests runs the weighted ones and says
// which it skipped; asked for, a test without weights is an error.
func TestRunWeights(t *testing.T) {
	p := []float64{0.9, 0.1, 0.2, 0.8, 0.6, 0.4, 0.3, 0.7}
	y := []int{0, 1, 0, 0}
	w := []float64{1, 2, 0, 1}
	r, err := Run(context.Background(), p, y, 2, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tests) != 6 || !strings.Contains(r.Answer, "skipped: ece_bin (takes no weights)") {
		t.Errorf("%d tests, answer %q", len(r.Tests), r.Answer)
	}
	if _, err := Run(context.Background(), p, y, 2, w, Options{Tests: []string{"skce"}}); err == nil {
		t.Error("skce with weights: no error")
	}
	if err := (Options{Tests: []string{"nope"}}).Validate(); err == nil {
		t.Error("unknown test: no error")
	}
}

// byScore's radix sort gives the order of a stable comparison sort of the
// scores (ties by index) on continuous scores, rounded ones (long runs of
// ties), negative numbers and -0 (a tie with 0), and scores a few ulps
// apart, below and above the size where it switches from the comparison
// sort.
func TestByScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{0, 1, 5, 63, 64, 1000, 20000} {
		for _, kind := range []string{"continuous", "rounded", "signed", "ulps"} {
			s := make([]float64, n)
			for i := range s {
				switch kind {
				case "continuous":
					s[i] = rng.Float64()
				case "rounded":
					s[i] = math.Round(rng.Float64()*20) / 20
				case "ulps": // scores that differ in the low bytes only
					s[i] = math.Float64frombits(math.Float64bits(0.3) + uint64(rng.IntN(1<<20)))
				case "signed":
					s[i] = []float64{-1e300, -2.5, -1e-310, math.Copysign(0, -1), 0, 1e-310, 3, math.Inf(1), math.Inf(-1)}[rng.IntN(9)]
				}
			}
			want := make([]int, n)
			for i := range want {
				want[i] = i
			}
			slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(s[a], s[b]) })
			got := byScore(s)
			for q := range want {
				if got[q] != want[q] {
					t.Fatalf("%s n=%d position %d: row %d (%v), want row %d (%v)", kind, n, q, got[q], s[got[q]], want[q], s[want[q]])
				}
			}
		}
	}
}
