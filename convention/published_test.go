package convention

import (
	"math"
	"testing"

	"github.com/calib-dev/calib/metric"
)

// near reports whether got is within tol of want.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// TestRobustnessMetricsPublished checks GCE against every literal value of
// robustness_metrics' uncertainty_test.py (@93ac2c2) it can reach: the
// test's assertAlmostEqual asks 7 places (5 for the Keras tests' dicts).
func TestRobustnessMetricsPublished(t *testing.T) {
	top2 := GCEOptions{Bins: 2, Adaptive: true, MaxProb: true, L2: true} // _GCE_DEFAULT
	probs3 := []float64{0.42610548, 0.41748077, 0.15641374, 0.44766216, 0.47721294, 0.0751249,
		0.1862702, 0.15139402, 0.66233578, 0.05753544, 0.8561222, 0.08634236, 0.18697925, 0.29836466, 0.51465609}
	labels3 := []int{0, 1, 2, 1, 2}
	bin1d := []float64{.91, .32, .66, .67, .57, .98, .41, .19}
	lab1d := []int{1, 0, 1, 1, 0, 1, 0, 0}
	for _, c := range []struct {
		name   string
		probs  []float64
		labels []int
		k      int
		o      GCEOptions
		want   float64
		places float64
	}{
		// test_binary_prediction_two_predictions_per_element: the two
		// predictions of the element averaged, [.45, .55], label 1.
		{"two per element", []float64{.45, .55}, []int{1}, 2, top2, 0.45, 5},
		// test_binary_predictions_on_different_predictions.
		{"different predictions", []float64{.2, .8, .3, .7}, []int{1, 0}, 2, top2, 0.5147815, 5},
		// test_tertiary_prediction: element 1 averages [.2,.4,.4] and
		// [.5,.3,.2], label 2; element 2 [.8,.15,.05], label 1.
		{"tertiary", []float64{.35, .35, .3, .8, .15, .05}, []int{2, 1}, 3, top2, 0.6174544, 5},
		{"test_consistency", probs3, labels3, 3, GCEOptions{Bins: 30, MaxProb: true}, 0.412713502, 7},
		{"test_sweep", probs3, labels3, 3, GCEOptions{MaxProb: true}, 0.412713502, 7},
		{"test_binary_1d", bin1d, lab1d, 1, GCEOptions{Bins: 30, MaxProb: true}, 0.18124999999999997, 7},
	} {
		got, err := GCE(c.probs, c.labels, c.k, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !near(got, c.want, 0.5*math.Pow(10, -c.places)) {
			t.Errorf("%s: %.10f, published %v", c.name, got, c.want)
		}
	}
	// The Keras "ece" of the same tests: 0.45 on the first two inputs,
	// 0.575 on the tertiary one (15 equal-width bins, top-label).
	for _, c := range []struct {
		probs  []float64
		labels []int
		k      int
		want   float64
	}{{[]float64{.45, .55}, []int{1}, 2, .45}, {[]float64{.2, .8, .3, .7}, []int{1, 0}, 2, .45}, {[]float64{.35, .35, .3, .8, .15, .05}, []int{2, 1}, 3, .575}} {
		sc, oc := metric.TopR(c.probs, c.labels, c.k, 1)
		cv, err := NewCurve(RobustnessMetrics, sc, oc, nil, 15, metric.EqualWidth)
		if err != nil {
			t.Fatal(err)
		}
		if got := cv.ECE(1); !near(got, c.want, 5e-6) {
			t.Errorf("keras ece %v: %v, published %v", c.probs, got, c.want)
		}
	}
}

// TestTorchmetricsPublished checks the torchmetrics convention against the
// values of torchmetrics' docstrings and tests (@dab0333), printed to 4
// decimals.
func TestTorchmetricsPublished(t *testing.T) {
	// binary_calibration_error's docstring: 2 bins.
	bin, err := NewCurve(Torchmetrics, []float64{0.25, 0.25, 0.55, 0.75, 0.75}, []float64{0, 0, 1, 1, 1}, nil, 2, metric.EqualWidth)
	if err != nil {
		t.Fatal(err)
	}
	if !near(bin.ECE(1), 0.2900, 5e-5) || !near(math.Sqrt(bin.ECE(2)), 0.2918, 5e-5) || !near(bin.MCE(), 0.3167, 5e-5) {
		t.Errorf("binary docstring: %v %v %v, published 0.2900 0.2918 0.3167", bin.ECE(1), math.Sqrt(bin.ECE(2)), bin.MCE())
	}
	// multiclass_calibration_error's docstring: 3 bins, float32.
	probs := []float64{.25, .20, .55, .55, .05, .40, .10, .30, .60, .90, .05, .05}
	sc, oc := metric.TopR(probs, []int{0, 1, 2, 0}, 3, 1)
	mc, err := NewCurve32(sc, oc, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !near(mc.ECE(1), 0.2000, 5e-5) || !near(math.Sqrt(mc.ECE(2)), 0.2082, 5e-5) || !near(mc.MCE(), 0.2333, 5e-5) {
		t.Errorf("multiclass docstring: %v %v %v, published 0.2000 0.2082 0.2333", mc.ECE(1), math.Sqrt(mc.ECE(2)), mc.MCE())
	}
	// test_binary_with_zero_pred: the four 1.0s fill the extra bin.
	z, err := NewCurve(Torchmetrics, []float64{1, 1, 1, 1, 0}, []float64{0, 0, 1, 1, 1}, nil, 2, metric.EqualWidth)
	if err != nil {
		t.Fatal(err)
	}
	if !near(z.ECE(1), 0.6, 1e-12) {
		t.Errorf("zero pred: %v, published 0.6", z.ECE(1))
	}
}

// TestTorchUncertaintyPublished checks TopLabelACE against
// torch-uncertainty's tests (tests/metrics/classification/
// test_calibration.py @0d0df2b).
func TestTorchUncertaintyPublished(t *testing.T) {
	// Binary, 2 bins: p [0.3, 0.24, 0.25, 0.2, 0.8], t [0,0,0,1,1]:
	// confidences max(p, 1-p), predictions round(p) (0.5 to 0).
	p := []float64{0.3, 0.24, 0.25, 0.2, 0.8}
	y := []int{0, 0, 0, 1, 1}
	sc, oc := make([]float64, len(p)), make([]float64, len(p))
	for i, v := range p {
		sc[i] = max(v, 1-v)
		pred := 0
		if v > 0.5 {
			pred = 1
		}
		if pred == y[i] {
			oc[i] = 1
		}
	}
	want := 3.0/5*(1-(0.7+0.76+0.75)/3) + 2.0/5*(0.8-0.5)
	got, mx, err := TopLabelACE(sc, oc, 2, 1)
	if err != nil || !near(got, want, 1e-12) {
		t.Errorf("binary l1: %v, %v; published %v", got, err, want)
	}
	// The multiclass one of the same scores, l2 and max.
	l2, _, _ := TopLabelACE(sc, oc, 2, 2)
	if w2 := 3.0/5*math.Pow(1-2.21/3, 2) + 2.0/5*0.3*0.3; !near(l2, w2, 1e-12) || !near(mx, 0.3, 1e-12) {
		t.Errorf("l2 %v (published square %v), max %v (0.3)", l2, w2, mx)
	}
}
