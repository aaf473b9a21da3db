package alarm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// stream draws n predictions of k classes (logits 2.5 N(0, 1)) and their
// labels from the softmax at temperature t of the logits after row
// change (t = 1: calibrated).
func stream(rng *rand.Rand, n, k, change int, t float64) ([][]float64, []int) {
	ps := make([][]float64, n)
	ys := make([]int, n)
	for i := range ps {
		z := make([]float64, k)
		for j := range z {
			z[j] = 2.5 * rng.NormFloat64()
		}
		p, q := mathx.TemperedSoftmax(z, 1), mathx.TemperedSoftmax(z, 1)
		if i >= change {
			q = mathx.TemperedSoftmax(z, t)
		}
		u := rng.Float64()
		y := k - 1
		for j, v := range q {
			if u -= v; u <= 0 {
				y = j
				break
			}
		}
		ps[i], ys[i] = p, y
	}
	return ps, ys
}

// TestFalseAlarmRate: on calibrated streams of 5,000 rows the test
// alarms in at most alpha of 400 runs (plus three binomial standard
// errors), and the detector (ARL 2,000) in far fewer than 5000/2000 runs.
func TestFalseAlarmRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const runs, n = 400, 5000
	tests, changes := 0, 0
	for range runs {
		a, err := New(10, Options{Alpha: 0.05, ARL: 2000, ClassWise: true})
		if err != nil {
			t.Fatal(err)
		}
		ps, ys := stream(rng, n, 10, n, 1)
		testAlarm, changeAlarm := false, false
		for i := range ps {
			a.Update(ps[i], ys[i], a.Bet(ps[i]))
			e := a.Evidence()
			testAlarm = testAlarm || e.TestAlarm()
			changeAlarm = changeAlarm || e.ChangeAlarm()
		}
		if testAlarm {
			tests++
		}
		if changeAlarm {
			changes++
		}
	}
	if limit := 0.05*runs + 3*math.Sqrt(0.05*0.95*runs); float64(tests) > limit {
		t.Errorf("the test alarmed on %d of %d calibrated streams (alpha 0.05: at most %.0f)", tests, runs, limit)
	}
	t.Logf("calibrated streams of %d rows: test alarms %d/%d (alpha 0.05), detector alarms %d/%d (ARL 2,000)", n, tests, runs, changes, runs)
}

// TestDetects: at temperature 2 after 2,000 calibrated rows, both layers
// alarm within 3,000 rows in every one of 20 runs.
func TestDetects(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 20 {
		a, _ := New(10, Options{ClassWise: true})
		ps, ys := stream(rng, 5000, 10, 2000, 2)
		testAt, changeAt := -1, -1
		for i := range ps {
			a.Update(ps[i], ys[i], a.Bet(ps[i]))
			e := a.Evidence()
			if testAt < 0 && e.TestAlarm() {
				testAt = i
			}
			if changeAt < 0 && e.ChangeAlarm() {
				changeAt = i
			}
		}
		if testAt < 2000 || changeAt < 2000 {
			t.Errorf("run %d: the test alarmed at row %d, the detector at %d (change at 2000)", run, testAt, changeAt)
		}
		if run == 0 {
			t.Logf("T = 2 from row 2,000: test alarm at row %d, detector at %d", testAt, changeAt)
		}
	}
}

// TestBetNow: a label known at once (Update with a nil bet) moves the
// alarm exactly as the bet made just before it does; a bet made before
// other labels arrived is the one applied.
func TestBetNow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ps, ys := stream(rng, 3000, 5, 1000, 1.5)
	a, _ := New(5, Options{ClassWise: true})
	b, _ := New(5, Options{ClassWise: true})
	for i := range ps {
		a.Update(ps[i], ys[i], nil)
		b.Update(ps[i], ys[i], b.Bet(ps[i]))
	}
	if a.Evidence() != b.Evidence() {
		t.Fatalf("%+v != %+v", a.Evidence(), b.Evidence())
	}
	// A stale bet: made on an empty alarm, applied after 3,000 rows.
	c, _ := New(5, Options{ClassWise: true})
	stale := c.Bet(ps[0])
	for _, v := range stale {
		if v != 0 {
			t.Fatalf("the first bets %v: want 0 (nothing learnt)", stale)
		}
	}
	before := a.Evidence()
	a.Update(ps[0], ys[0], stale)
	if after := a.Evidence(); after.Test != before.Test || after.TestTop != before.TestTop {
		t.Fatalf("a zero bet moved the test: %v -> %v", before.Test, after.Test)
	}
}
