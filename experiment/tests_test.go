package experiment

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
)

// binomCDF is P(X <= r) for X ~ Binomial(n, p), summed from the pmf.
func binomCDF(r, n int, p float64) float64 {
	s := 0.0
	for x := 0; x <= r; x++ {
		lg := func(v int) float64 { l, _ := math.Lgamma(float64(v + 1)); return l }
		s += math.Exp(lg(n) - lg(x) - lg(n-x) + float64(x)*math.Log(p) + float64(n-x)*math.Log1p(-p))
	}
	return s
}

// The binomial intervals against closed forms and a brute-force pmf.
func TestTestsIntervals(t *testing.T) {
	for _, n := range []int{40, 200, 1000} {
		ci := clopperPearson(0, n)
		if want := 1 - math.Pow(0.025, 1/float64(n)); ci[0] != 0 || math.Abs(ci[1]-want) > 1e-9 {
			t.Errorf("Clopper-Pearson 0 of %d: %v, want [0, %v]", n, ci, want)
		}
		ci = clopperPearson(n, n)
		if want := math.Pow(0.025, 1/float64(n)); ci[1] != 1 || math.Abs(ci[0]-want) > 1e-9 {
			t.Errorf("Clopper-Pearson %d of %d: %v, want [%v, 1]", n, n, ci, want)
		}
		for _, a := range []float64{0.05, 0.01} {
			lo, hi := acceptance(n, a)
			l, h := int(math.Round(lo*float64(n))), int(math.Round(hi*float64(n)))
			if !(binomCDF(h, n, a) >= 0.995) || (h > 0 && binomCDF(h-1, n, a) >= 0.995) {
				t.Errorf("n = %d alpha %g: upper %d is not the 99.5 %% quantile", n, a, h)
			}
			if !(binomCDF(l, n, a) >= 0.005) || (l > 0 && binomCDF(l-1, n, a) >= 0.005) {
				t.Errorf("n = %d alpha %g: lower %d is not the 0.5 %% quantile", n, a, l)
			}
		}
	}
	if lo, hi := acceptance(1000, 0.05); lo != 0.033 || hi != 0.069 {
		t.Errorf("1,000 at 0.05: [%v, %v], want [0.033, 0.069] (the brute-force quantiles)", lo, hi)
	}
}

// A small study: every test has its rows, rates are in [0, 1], the table
// says whether each holds, real sets above their size are skipped, and
// the result is the same for 1 and 3 workers.
func TestTestsSmall(t *testing.T) {
	f, y := miscalibrated("temperature", 150, 3, seedOf(1, 1))
	real := RealSet{Name: "net", Probs: f, Labels: y, K: 3}
	o := TestsOptions{Sizes: []int{60, 200}, Ks: []int{3}, Sets: 12, Resamples: 99, ExtraMaxN: 60, PowerSizes: []int{80}, PowerSets: 6, PowerK: 3,
		Real: []RealSet{real}, Workers: 1}
	r, err := Tests(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// synthetic: n = 60 with the extras (10 + 4 rows), n = 200 (10); net at n = 60 (10).
	if len(r.Size) != 34 {
		t.Errorf("%d size rows, want 34", len(r.Size))
	}
	for _, s := range r.Size {
		for i := range s.Rate {
			if !(s.Rate[i] >= 0 && s.Rate[i] <= 1) || s.Holds[i] != (s.Rate[i] <= s.Accept[i][1]) {
				t.Errorf("%+v", s)
			}
		}
		if s.Sets+s.Failed != 12 {
			t.Errorf("%s %s: %d sets and %d failed of 12", s.Test, s.Notion, s.Sets, s.Failed)
		}
	}
	if len(r.Power) != 3*10 || len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "net at n = 200") {
		t.Errorf("%d power rows, skipped %v", len(r.Power), r.Skipped)
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil || !strings.Contains(b.String(), "Power: rejection rate") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
	o.Workers = 3
	r3, err := Tests(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r, r3) {
		t.Error("3 workers give another result")
	}
	// Without the power study (or synthetic cells) only the figures with
	// data are drawn (an empty log axis panicked).
	o.NoPower, o.Ks = true, nil
	o.Sizes = []int{60}
	r4, err := Tests(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r4.Figures()["power"]; ok || len(r4.Power) != 0 {
		t.Errorf("NoPower: %d power rows, figures %v", len(r4.Power), r4.Figures())
	}
	if _, err := Save(t.TempDir(), "tests", r4, nil); err != nil {
		t.Fatal(err)
	}
	// Strong miscalibration (the paper's temperature at n = 80, K = 3) is
	// rejected by the top-label tests in most sets.
	for _, p := range r.Power {
		if p.Miscalibration == "temperature" && p.Test == "spiegelhalter" && p.Notion == "top_label" && p.Rate < 0.5 {
			t.Errorf("temperature power of spiegelhalter top_label at n = 80: %v", p.Rate)
		}
	}
}
