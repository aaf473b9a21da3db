package recal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
)

// logitDirs maps the golden models to their logits in the repository.
var logitDirs = map[string]string{
	"cifar10_resnet110-brier":    "../cmd/calib/internal/demo/cifar10_resnet110-brier",
	"cifar10_densenet121-flsd53": "../testdata/logits/cifar10_densenet121-flsd53",
	"cifar100_resnet110-brier":   "../testdata/logits/cifar100_resnet110-brier",
}

type goldenModel struct {
	TemperatureScaling struct {
		Temperature float64 `json:"temperature"`
	} `json:"temperature_scaling"`
	SplineFit struct {
		KnotValues        []float64 `json:"knot_values"`
		SecondDerivatives []float64 `json:"second_derivatives_at_knots"`
		First10           []float64 `json:"recalibrated_test_top1_first10"`
		Mean              float64   `json:"recalibrated_test_top1_mean"`
	} `json:"spline_top1_fit_on_val"`
	Variants struct {
		KSSplineCorrect float64 `json:"ks_top1_spline_test_with_correct_linear_interpolation"`
	} `json:"variants"`
}

func loadGolden(t *testing.T) map[string]goldenModel {
	t.Helper()
	b, err := os.ReadFile("../testdata/golden/splines/reference_results.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Models map[string]goldenModel `json:"models"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Models) == 0 {
		t.Fatal("no golden models")
	}
	return g.Models
}

func loadSplit(t *testing.T, dir, split string) *data.Set {
	t.Helper()
	s, err := data.Load(filepath.Join(dir, split+"_logits.npy"), data.Options{Logits: true, Labels: filepath.Join(dir, split+"_labels.npy")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// float32Softmax is scipy.special.softmax on float32 logits: exp(z - max) in
// float32, summed with NumPy's pairwise summation (8 accumulators for rows
// of up to 128 entries), divided in float32.
func float32Softmax(z []float64) []float32 {
	k := len(z)
	x := make([]float32, k)
	m := float32(math.Inf(-1))
	for i, v := range z {
		x[i] = float32(v)
		m = max(m, x[i])
	}
	e := make([]float32, k)
	for i := range x {
		e[i] = float32(math.Exp(float64(x[i] - m)))
	}
	var sum float32
	if k < 8 {
		for _, v := range e {
			sum += v
		}
	} else {
		var r [8]float32
		copy(r[:], e[:8])
		i := 8
		for ; i+8 <= k; i += 8 {
			for j := range r {
				r[j] += e[i+j]
			}
		}
		sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < k; i++ {
			sum += e[i]
		}
	}
	p := make([]float32, k)
	for i := range e {
		p[i] = e[i] / sum
	}
	return p
}

// TestSplineGoldenFloat32 feeds the reference's float32 pipeline (float32
// softmax, cumsum of the scores in float32 divided by N in float32) to the
// spline fit and compares the knot values (5e-6 relative) and second
// derivatives (2e-5 relative) with spline_top1_fit_on_val, and, with the
// reference's swapped interpolation weights, its recalibrated test scores.
func TestSplineGoldenFloat32(t *testing.T) {
	for name, g := range loadGolden(t) {
		s := loadSplit(t, logitDirs[name], "val")
		n, k := s.N, s.K
		score := make([]float32, n)
		correct := make([]float64, n)
		for i := 0; i < n; i++ {
			p := float32Softmax(s.Logits[i*k : (i+1)*k])
			best := 0
			for m := range p {
				if p[m] > p[best] {
					best = m
				}
			}
			score[i] = p[best]
			if best == s.Labels[i] {
				correct[i] = 1
			}
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] < score[idx[b]] })
		sorted, y := make([]float64, n), make([]float64, n)
		var cs float32
		co := 0.0
		for i, j := range idx {
			cs += score[j]
			co += correct[j]
			sorted[i] = float64(score[j])
			y[i] = co/float64(n) - float64(cs/float32(n))
		}
		c, err := fitSorted(sorted, y, nil, nil, SplineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rel := func(what string, got, want []float64, tol float64) {
			scale := 0.0
			for _, v := range want {
				scale = math.Max(scale, math.Abs(v))
			}
			worst := 0.0
			for i := range want {
				worst = math.Max(worst, math.Abs(got[i]-want[i])/scale)
			}
			if !(worst <= tol) || len(got) != len(want) {
				t.Errorf("%s %s: %v, reference %v (max diff %.2g of the largest, tol %g)", name, what, got, want, worst, tol)
			} else {
				t.Logf("%s %s: max diff %.2g of the largest", name, what, worst)
			}
		}
		rel("knot values", c.KnotValues, g.SplineFit.KnotValues, 5e-6)
		rel("second derivatives", c.SecondDerivatives, g.SplineFit.SecondDerivatives, 2e-5)

		// The reference's swapped interpolation on its float32 test scores
		// reproduces its recalibrated test scores.
		c.ReferenceInterpolation = true
		test := loadSplit(t, logitDirs[name], "test")
		var got []float64
		sum := 0.0
		for i := 0; i < test.N; i++ {
			p := float32Softmax(test.Logits[i*k : (i+1)*k])
			v := c.Map(float64(slices.Max(p)))
			sum += v
			if i < 10 {
				got = append(got, v)
			}
		}
		worst := 0.0
		for i, w := range g.SplineFit.First10 {
			worst = math.Max(worst, math.Abs(got[i]-w))
		}
		md := math.Abs(sum/float64(test.N) - g.SplineFit.Mean)
		// Tolerances: the reference sorts the validation scores with an
		// unstable sort, so among its tied float32 scores (129 on
		// cifar10_resnet110-brier) the order, and so a few interpolated
		// values, can differ (measured: 5.3e-5 at most, 6e-8 elsewhere).
		if !(worst <= 1e-4) || !(md <= 1e-6) {
			t.Errorf("%s reference interpolation: first 10 max |diff| %.2g (tol 1e-4), mean |diff| %.2g (tol 1e-6)", name, worst, md)
		}
		t.Logf("%s reference interpolation: first 10 max |diff| %.2g, mean diff %.2g", name, worst, md)
	}
}

// TestSplineGoldenKS fits the top-1 spline on val (float64 pipeline) and
// compares the test KS after recalibration with the reference's figure for
// correct linear interpolation (5e-5 absolute).
func TestSplineGoldenKS(t *testing.T) {
	for name, g := range loadGolden(t) {
		val, test := loadSplit(t, logitDirs[name], "val"), loadSplit(t, logitDirs[name], "test")
		sp, err := FitSpline(val.Probs, val.Labels, val.K, nil, SplineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, c := metric.TopR(test.Probs, test.Labels, test.K, 1)
		for i := range s {
			s[i] = sp.Top1.Map(s[i])
		}
		ks, _ := metric.KS(s, c, false, nil)
		if d := math.Abs(ks - g.Variants.KSSplineCorrect); d > 5e-5 {
			t.Errorf("%s: KS after spline %v, reference %v", name, ks, g.Variants.KSSplineCorrect)
		} else {
			t.Logf("%s: KS after spline |diff| %.2g", name, d)
		}
		// The full probability vectors keep the arg max and the top-1 score.
		p, err := sp.Calibrate(test.Probs, nil, test.K)
		if err != nil {
			t.Fatal(err)
		}
		s2, c2 := metric.TopR(p, test.Labels, test.K, 1)
		if !slices.Equal(c, c2) {
			t.Errorf("%s: recalibration changed the arg max", name)
		}
		ks2, _ := metric.KS(s2, c2, false, nil)
		// The vectors clamp the top-1 score at 1/K + 1e-9 (a few CIFAR-100
		// scores map below 1/K): KS moves by 2e-6 there.
		if math.Abs(ks2-ks) > 1e-5 {
			t.Errorf("%s: KS of the vectors %v, of the scores %v", name, ks2, ks)
		}
		for i := 0; i < test.N; i++ {
			sum := 0.0
			for _, v := range p[i*test.K : (i+1)*test.K] {
				sum += v
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("%s row %d sums to %v", name, i, sum)
			}
		}
	}
}

// TestTemperatureGolden compares the NLL-optimal temperature with the
// reference's (1e-4 relative) and checks that it lowers the validation NLL
// and the test NLL of the Brier-loss networks. On the focal-loss network
// (cifar10_densenet121-flsd53, already well calibrated, T = 0.958 on val) the
// test NLL rises slightly: asserted to stay within 1e-3.
func TestTemperatureGolden(t *testing.T) {
	for name, g := range loadGolden(t) {
		val, test := loadSplit(t, logitDirs[name], "val"), loadSplit(t, logitDirs[name], "test")
		ts, err := FitTemperature(val.Logits, val.Labels, val.K, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := g.TemperatureScaling.Temperature
		if d := math.Abs(ts.Temperature-want) / want; d > 1e-4 {
			t.Errorf("%s: T = %v, reference %v (rel %.2g)", name, ts.Temperature, want, d)
		} else {
			t.Logf("%s: T rel diff %.2g", name, d)
		}
		p, err := ts.Calibrate(test.Probs, test.Logits, test.K)
		if err != nil {
			t.Fatal(err)
		}
		pv, _ := ts.Calibrate(val.Probs, val.Logits, val.K)
		if vb, va := metric.NLL(val.Probs, val.Logits, val.Labels, val.K, nil), metric.NLL(pv, nil, val.Labels, val.K, nil); !(va < vb) {
			t.Errorf("%s: validation NLL %v -> %v", name, vb, va)
		}
		before, after := metric.NLL(test.Probs, test.Logits, test.Labels, test.K, nil), metric.NLL(p, nil, test.Labels, test.K, nil)
		t.Logf("%s: T = %.4f, test NLL %.5f -> %.5f", name, ts.Temperature, before, after)
		if strings.HasSuffix(name, "flsd53") {
			if !(math.Abs(after-before) < 1e-3) {
				t.Errorf("%s: test NLL %v -> %v", name, before, after)
			}
		} else if !(after < before) {
			t.Errorf("%s: test NLL %v -> %v", name, before, after)
		}
	}
}

// TestRoundTrip saves and loads every method and requires identical maps
// and identical outputs.
func TestRoundTrip(t *testing.T) {
	s := loadSplit(t, logitDirs["cifar10_resnet110-brier"], "val")
	ts, err := FitTemperature(s.Logits, s.Labels, s.K, nil)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := FitSpline(s.Probs, s.Labels, s.K, nil, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spc, err := FitSpline(s.Probs, s.Labels, s.K, nil, SplineOptions{Constrained: true})
	if err != nil {
		t.Fatal(err)
	}
	if !spc.Top1.Constrained || slices.Equal(spc.Top1.KnotValues, sp.Top1.KnotValues) {
		t.Errorf("constrained top-1 spline: %+v", spc.Top1.KnotValues)
	}
	for _, c := range []Calibrator{ts, sp, spc} {
		var buf bytes.Buffer
		if err := Save(&buf, c); err != nil {
			t.Fatal(err)
		}
		c2, err := Load(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Errorf("%s: the loaded map differs", c.Info().Method)
		}
		p1, _ := c.Calibrate(s.Probs, s.Logits, s.K)
		p2, _ := c2.Calibrate(s.Probs, s.Logits, s.K)
		if !slices.Equal(p1, p2) {
			t.Errorf("%s: outputs differ after the round trip", c.Info().Method)
		}
	}
	var buf bytes.Buffer
	Save(&buf, ts)
	if !bytes.Contains(buf.Bytes(), []byte(`"temperature": `)) || !bytes.Contains(buf.Bytes(), []byte(`"schema_version": 1`)) {
		t.Errorf("temperature JSON: %s", buf.String())
	}
	for _, bad := range []string{`{}`, `{"schema_version": 1, "method": "nope", "input": "logits", "k": 3}`,
		`{"schema_version": 1, "method": "temperature", "input": "logits", "k": 3, "temperature": -1}`,
		`{"schema_version": 1, "method": "temperature", "input": "logits", "k": 3, "temperature": 1, "t": 2}`} {
		if _, err := Load(bytes.NewReader([]byte(bad))); err == nil {
			t.Errorf("Load(%s) did not fail", bad)
		}
	}
}

// TestTemperatureNewton: FitTemperature's T minimises the NLL (a grid of
// 2,001 temperatures on a log scale around it reads no lower value, and
// T (1 -+ 1e-6) reads no lower either) on random logits at several scales;
// separable rows (the label's logit 3 above the others in every row), whose
// NLL falls all the way to T = 0.05, are refused as degenerate: the
// derivative is summed without cancellation, so it does not read 0 where
// the label's probability rounds to 1.
func TestTemperatureNewton(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, k = 300, 4
	for _, scale := range []float64{0.1, 1, 5} {
		z, y := make([]float64, n*k), make([]int, n)
		for i := range y {
			for j := range k {
				z[i*k+j] = scale * rng.NormFloat64()
			}
			y[i] = rng.IntN(k)
			z[i*k+y[i]] += scale // informative logits
		}
		tf, err := FitTemperature(z, y, k, nil)
		if err != nil {
			t.Fatalf("scale %v: %v", scale, err)
		}
		nll := func(T float64) float64 { return meanNLL(z, y, k, 1/T) }
		best := nll(tf.Temperature)
		for _, T := range []float64{tf.Temperature * (1 - 1e-6), tf.Temperature * (1 + 1e-6)} {
			if nll(T) < best-1e-15 {
				t.Errorf("scale %v: NLL(%v) = %v below NLL(T = %v) = %v", scale, T, nll(T), tf.Temperature, best)
			}
		}
		for i := range 2001 {
			T := tf.Temperature * math.Exp(float64(i-1000)/200)
			if T >= MinTemperature && T <= MaxTemperature && nll(T) < best-1e-12 {
				t.Errorf("scale %v: NLL(%v) = %v below the fit's %v at T = %v", scale, T, nll(T), best, tf.Temperature)
				break
			}
		}
	}
	z, y := make([]float64, 40*3), make([]int, 40)
	for i := range y {
		y[i] = i % 3
		z[i*3+y[i]] = 3
	}
	if tf, err := FitTemperature(z, y, 3, nil); !errors.Is(err, ErrSeparable) || !errors.Is(err, ErrInput) {
		t.Errorf("separable rows: T = %+v, error %v; want ErrSeparable", tf, err)
	}
}

// TestTemperatureSeparable: logits on which a classifier is right in
// every row are refused (ErrSeparable), at every size of the label's lead:
// the out-of-fold log-probabilities of scikit-learn's LogisticRegression(C
// = 1e6) on separable data lead by 13 to 20 nats, where Newton's steps
// from T = 1 shrink to 1/13 in beta and the search used to stop after 200
// of them at T = 0.06, returning probabilities of 1 - 1e-93. A row that
// ties the label with another logit is still separable; one row where
// another class leads makes the data fit.
func TestTemperatureSeparable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, lead := range []float64{0.5, 3, 13.4, 20, 700} {
		const n, k = 200, 2
		z, y := make([]float64, n*k), make([]int, n)
		for i := range y {
			y[i] = i % 2
			z[i*k+y[i]] = lead * (1 + rng.Float64()/2)
		}
		tf, err := FitTemperature(z, y, k, nil)
		if !errors.Is(err, ErrSeparable) || !strings.Contains(fmt.Sprint(err), "the label's logit is the largest") {
			t.Errorf("lead %v: T = %+v, error %v; want ErrSeparable", lead, tf, err)
		}
		z[0], z[1] = 1, 1 // a tie in row 1: still no minimum
		if tf, err := FitTemperature(z, y, k, nil); !errors.Is(err, ErrSeparable) {
			t.Errorf("lead %v with a tie: T = %+v, error %v; want ErrSeparable", lead, tf, err)
		}
		// A weight of 0 on the one wrong row leaves the data separable.
		z[0], z[1] = 0, 1
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		w[0] = 0
		if tf, err := FitTemperature(z, y, k, w); !errors.Is(err, ErrSeparable) {
			t.Errorf("lead %v, the wrong row of weight 0: T = %+v, error %v; want ErrSeparable", lead, tf, err)
		}
	}
}

// TestTemperatureCrawl: where Newton's steps shrink to 1/gap (200 rows
// right by gap = 13 nats, one wrong by delta), the search bisects and
// finds the minimum. The minimum is known: NLL'(beta) = 0 at
// 200 gap sigma(-gap beta) = delta sigma(delta beta), which for these
// sizes is e^{-gap beta} = delta / (2 * 200 * gap) within 1e-100
// relative; with delta = 5200 e^{-13 * 19}, beta* = 19 (T* = 1/19).
// The search of 200 unguarded Newton steps stopped near T = 0.06.
func TestTemperatureCrawl(t *testing.T) {
	const n, k, gap = 201, 2, 13.0
	delta := 2 * 200 * gap * math.Exp(-gap*19)
	z, y := make([]float64, n*k), make([]int, n)
	for i := range 200 {
		y[i] = i % 2
		z[i*k+y[i]] = gap
	}
	y[200], z[200*k] = 1, delta // the label's logit 0, the other's delta
	tf, err := FitTemperature(z, y, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.0 / 19; math.Abs(tf.Temperature-want) > 1e-9*want {
		t.Errorf("T = %.15g, want %.15g within 1e-9 relative", tf.Temperature, want)
	}
}

// meanNLL is the mean NLL of softmax(beta z), computed directly.
func meanNLL(z []float64, y []int, k int, beta float64) float64 {
	s := 0.0
	for i, yi := range y {
		row := z[i*k : (i+1)*k]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, beta*v)
		}
		e := 0.0
		for _, v := range row {
			e += math.Exp(beta*v - m)
		}
		s += m + math.Log(e) - beta*row[yi]
	}
	return s / float64(len(y))
}

// TestPlattSeparable: scores that separate the outcomes (binary: every
// p1 of class 1 above every p1 of class 0; top-label: every wrong
// prediction less confident than every right one) are refused with
// ErrSeparable instead of a slope that the 1e-8 ridge alone keeps finite;
// one pair of rows out of order makes them fit.
func TestPlattSeparable(t *testing.T) {
	const n = 100
	p, y := make([]float64, 2*n), make([]int, n)
	for i := range y {
		y[i] = i % 2
		s := 0.1 + 0.3*float64(i)/n // class 0: p1 in [0.1, 0.4)
		if y[i] == 1 {
			s += 0.5 // class 1: p1 in [0.6, 0.9)
		}
		p[2*i], p[2*i+1] = 1-s, s
	}
	for _, mode := range []string{ModeBinary, ModeTopLabel} {
		c, err := FitPlatt(p, y, 2, mode, nil)
		if !errors.Is(err, ErrSeparable) || !errors.Is(err, ErrTooFew) {
			t.Errorf("%s: map %+v, error %v; want ErrSeparable", mode, c, err)
		}
	}
	// Top-label: every row right at confidence 0.6 to 0.9 but one wrong
	// at 0.55, the least confident: separable in top-label mode.
	q := slices.Clone(p)
	q[0], q[1] = 0.45, 0.55 // row 1 (class 0) predicted class 1 at 0.55: wrong, least confident
	if c, err := FitPlatt(q, y, 2, ModeTopLabel, nil); !errors.Is(err, ErrSeparable) || !strings.Contains(err.Error(), "every wrong prediction's score is at or below every right prediction's") {
		t.Errorf("top-label: map %+v, error %v; want ErrSeparable naming the wrong predictions", c, err)
	}
	// Rows 1 and 2 swapped in score: the classes overlap and a finite fit exists.
	p[0], p[1], p[2], p[3] = 0.05, 0.95, 0.95, 0.05
	if c, err := FitPlatt(p, y, 2, ModeBinary, nil); err != nil || !(c.A > 0) || math.IsInf(c.A, 0) {
		t.Errorf("overlapping: map %+v, error %v; want a finite slope > 0", c, err)
	}
}
