package calibtest

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestResamplesThatCannotReject: B resamples give p >= 1/(B+1), so B
// below 1/alpha - 1 can never reject: Validate refuses it (calib test
// --resamples 1 was accepted), and B above MaxResamples (10^9 ran past
// 120 s); an empty non-nil test list is refused instead of meaning the
// default list.
func TestResamplesThatCannotReject(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Resamples: 1}, "at least 19 resamples"},
		{Options{Resamples: 18}, "at least 19 resamples"},
		{Options{Resamples: 98, Alpha: 0.01}, "at least 99 resamples"},
		{Options{Resamples: MaxResamples + 1}, "want 1 to 1000000"},
		{Options{Tests: []string{}}, "no test named"},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	for _, o := range []Options{{Resamples: 19}, {Resamples: 99, Alpha: 0.01}, {}, {Resamples: MaxResamples}} {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if MinResamples(0.05) != 19 || MinResamples(0.01) != 99 || MinResamples(0.5) != 1 || MinResamples(0.03) != 33 {
		t.Errorf("MinResamples: %d %d %d %d", MinResamples(0.05), MinResamples(0.01), MinResamples(0.5), MinResamples(0.03))
	}
}

// TestTestsOnFewRows: the default tests run on 2 rows (calib test failed
// there with the SKCE's "blocks of 1 rows for 2 samples"); skce named on
// fewer than 4 rows is ErrTooFew, and "all" skips it, saying so.
func TestTestsOnFewRows(t *testing.T) {
	p := []float64{0.2, 0.3, 0.5, 0.6, 0.3, 0.1, 0.1, 0.8, 0.1}
	y := []int{2, 0, 1}
	if _, err := Run(context.Background(), p[:6], y[:2], 3, nil, Options{Resamples: 19}); err != nil {
		t.Errorf("default tests on 2 rows: %v", err)
	}
	// Named: its entry says why it cannot run, as every test's does.
	if r, err := Run(context.Background(), p, y, 3, nil, Options{Tests: []string{"skce"}}); err != nil || len(r.Tests) != 1 || !strings.Contains(r.Tests[0].Error, "at least 4 rows") {
		t.Errorf("skce on 3 rows: %v, %+v", err, r)
	}
	// skce_u on one row; skce and skce_u where every prediction is the
	// same (no kernel width from the data).
	for _, c := range []struct {
		p    []float64
		y    []int
		test string
		want string
	}{
		{[]float64{0.3, 0.7}, []int{1}, "skce_u", "fewer than 2 samples"},
		{[]float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, []int{0, 1, 0, 1, 1}, "skce", "median distance 0"},
		{[]float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, []int{0, 1, 0, 1, 1}, "skce_u", "median distance 0"},
	} {
		r, err := Run(context.Background(), c.p, c.y, 2, nil, Options{Tests: []string{c.test}, Resamples: 19})
		if err != nil || len(r.Tests) != 1 || !strings.Contains(r.Tests[0].Error, c.want) {
			t.Errorf("%s on %d rows: %v, %+v", c.test, len(c.y), err, r)
		}
	}
	r, err := Run(context.Background(), p, y, 3, nil, Options{Tests: []string{"all"}, Resamples: 19})
	if err != nil || !strings.Contains(r.Answer, "skce (n < 4)") {
		t.Errorf("all on 3 rows: %v, %+v", err, r)
	}
}

// TestDefaultTestsSeedFree: the default list holds no test whose
// statistic depends on the seed (the SKCE block test's p-value spans
// 0.0003 to 0.41 over 40 seeds on real predictions): the asymptotic
// tests are identical for any seed, and on the paper's miscalibrated
// setting every verdict is the same for 5 seeds.
func TestDefaultTestsSeedFree(t *testing.T) {
	if slices.Contains(defaultTests, "skce") || !slices.Contains(testNames, "skce") {
		t.Fatalf("defaultTests %v, testNames %v", defaultTests, testNames)
	}
	p, y := paperRows(21, 2000, 3, false)
	var first *Report
	for seed := uint64(1); seed <= 5; seed++ {
		r := must(Run(context.Background(), p, y, 3, nil, Options{Seed: seed, Resamples: 199}))
		if first == nil {
			first = r
			continue
		}
		for i, x := range r.Tests {
			f := first.Tests[i]
			if x.Reject != f.Reject || x.Statistic != f.Statistic || x.Resamples == 0 && x.PValue != f.PValue {
				t.Errorf("seed %d: %s %s: p %v reject %v; seed 1: p %v reject %v", seed, x.Test, x.Notion, x.PValue, x.Reject, f.PValue, f.Reject)
			}
		}
	}
}
