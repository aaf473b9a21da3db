package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/calib-dev/calib/internal/mathx"
)

// Miscalibration names an invertible map from the true class
// probabilities h to the reported predictions f, so that E[y | f] = h.
type Miscalibration string

// The miscalibrations of a Family.
const (
	// Calibrated reports the truth: f = h (CE = 0).
	Calibrated Miscalibration = "calibrated"
	// Temperature reports f = softmax(log h / Param): over-confident for
	// Param < 1, under-confident above 1.
	Tempering Miscalibration = "temperature"
	// Smoothing reports f = (1 - Param) h + Param / K (label smoothing:
	// under-confident, every class at least Param / K).
	Smoothing Miscalibration = "smoothing"
	// PriorShift reports f proportional to h_k w_k with log w_k drawn
	// once per family from N(0, Param^2) (PCG(Seed, 0)): the class priors
	// of training differ from those of use.
	PriorShift Miscalibration = "prior_shift"
	// Entropic reports f = softmax(log h / t(h)) with a temperature that
	// grows with the truth's normalised entropy H(h) / log K in [0, 1]:
	// t = Param^(1 - 2 H): over-confident on easy rows, under-confident
	// on hard ones (no single temperature or coordinate map inverts it).
	Entropic Miscalibration = "entropic"
	// Split reports f = softmax(log h / t) with t = Param where the
	// truth's top class is in the first half of the classes (k < K/2,
	// ceiling) and t = 1 / Param elsewhere: over-confident in one region
	// of the simplex and under-confident in the other for Param < 1 (the
	// miscalibration's direction changes between regions, which no
	// single map of the temperature, the coordinates or the class biases
	// inverts).
	Split Miscalibration = "split"
	// OneClass reports f proportional to (h_0^(1/Param), h_1, ...,
	// h_{K-1}): class 0 alone distorted, over-predicted for Param > 1
	// (its share raised most where it is small), the other classes'
	// ratios kept.
	OneClass Miscalibration = "one_class"
)

// Family is a synthetic setting with a known calibration error: truths
// h = softmax(log x / T1) of x ~ Dirichlet(Alpha 1_K) (flat at Alpha = 1,
// sharp for small Alpha; T1 = 0 means 1, h = x), labels y ~
// Categorical(h), predictions f = m(h) for the invertible miscalibration
// m. Seed fixes the prior shift's weights. The ECE^KDE paper's setting
// (Setup) is {Alpha: 1, T1: 0.6, Tempering, Param: 0.6}.
type Family struct {
	K     int
	Alpha float64
	T1    float64
	Miscalibration
	Param float64
	Seed  uint64
}

// String names the family, e.g. "temperature 0.7, K = 20, Dir(1)".
func (fa Family) String() string {
	truth := fmt.Sprintf("Dir(%g)", fa.Alpha)
	if fa.T1 != 0 && fa.T1 != 1 {
		truth += fmt.Sprintf(" at T1 %g", fa.T1)
	}
	if fa.Miscalibration == Calibrated {
		return fmt.Sprintf("calibrated, K = %d, %s", fa.K, truth)
	}
	return fmt.Sprintf("%s %g, K = %d, %s", fa.Miscalibration, fa.Param, fa.K, truth)
}

// truths returns n truths h (n×K).
func (fa Family) truths(n int, rng *rand.Rand) []float64 {
	h := Dirichlet(make([]float64, n*fa.K), fa.K, fa.Alpha, rng)
	if fa.T1 != 0 && fa.T1 != 1 {
		Temperature(h, h, fa.K, fa.T1)
	}
	return h
}

func (fa Family) check() error {
	switch {
	case fa.K < 2:
		return fmt.Errorf("synth: family %v: K < 2", fa)
	case !(fa.Alpha > 0) || math.IsInf(fa.Alpha, 0):
		return fmt.Errorf("synth: family %v: alpha must be positive", fa)
	case !(fa.T1 >= 0) || math.IsInf(fa.T1, 0):
		return fmt.Errorf("synth: family %v: T1 must be positive (or 0)", fa)
	}
	switch fa.Miscalibration {
	case Calibrated:
	case Tempering, Entropic, Split, OneClass:
		if !(fa.Param > 0) || math.IsInf(fa.Param, 0) {
			return fmt.Errorf("synth: family %v: the temperature must be positive", fa)
		}
	case Smoothing:
		if !(fa.Param >= 0 && fa.Param < 1) {
			return fmt.Errorf("synth: family %v: the smoothing must be in [0, 1)", fa)
		}
	case PriorShift:
		if !(fa.Param >= 0) || math.IsInf(fa.Param, 0) {
			return fmt.Errorf("synth: family %v: the shift's spread must be >= 0", fa)
		}
	default:
		return fmt.Errorf("synth: unknown miscalibration %q", fa.Miscalibration)
	}
	return nil
}

// Dirichlet fills dst (n×k) with draws from Dirichlet(alpha 1_k) and
// returns it, in log space so that small alpha does not underflow: log
// G_k = log Gamma(alpha + 1) + log(U) / alpha (Marsaglia and Tsang 2000,
// with their boost for alpha < 1), normalised by log-sum-exp. Entries may
// be 0 only where exp underflows (below about 1e-308).
func Dirichlet(dst []float64, k int, alpha float64, rng *rand.Rand) []float64 {
	if k < 1 || len(dst)%k != 0 || !(alpha > 0) {
		panic(fmt.Sprintf("synth: Dirichlet: %d values for K = %d, alpha %v", len(dst), k, alpha))
	}
	for i := 0; i < len(dst); i += k {
		row := dst[i : i+k]
		mx := math.Inf(-1)
		for m := range row {
			lg := logGamma1(alpha, rng)
			row[m] = lg
			mx = math.Max(mx, lg)
		}
		s := 0.0
		for m := range row {
			row[m] = math.Exp(row[m] - mx)
			s += row[m]
		}
		for m := range row {
			row[m] /= s
		}
	}
	return dst
}

// logGamma1 returns the log of a Gamma(alpha, 1) draw: Marsaglia and
// Tsang's method for shape alpha + 1 >= 1, times U^(1/alpha) for alpha < 1.
func logGamma1(alpha float64, rng *rand.Rand) float64 {
	a := alpha
	boost := 0.0
	if a < 1 {
		boost = math.Log(1-rng.Float64()) / a // U in (0, 1]
		a++
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return math.Log(d) + math.Log(v) + boost
		}
	}
}

// weights returns the prior shift's log-weights.
func (fa Family) weights() []float64 {
	rng := rand.New(rand.NewPCG(fa.Seed, 0))
	w := make([]float64, fa.K)
	for m := range w {
		w[m] = fa.Param * rng.NormFloat64()
	}
	return w
}

// Report writes the predictions f = m(h) of the truths h (n×K) to dst (nil
// allocates) and returns it.
func (fa Family) Report(dst, h []float64) []float64 {
	k := fa.K
	if dst == nil {
		dst = make([]float64, len(h))
	}
	var logw []float64
	if fa.Miscalibration == PriorShift {
		logw = fa.weights()
	}
	z := make([]float64, k)
	for i := 0; i < len(h); i += k {
		row, out := h[i:i+k], dst[i:i+k]
		switch fa.Miscalibration {
		case Calibrated:
			copy(out, row)
		case Smoothing:
			for m, v := range row {
				out[m] = (1-fa.Param)*v + fa.Param/float64(k)
			}
		case Tempering, Entropic, PriorShift, Split, OneClass:
			t := fa.Param
			switch fa.Miscalibration {
			case Split:
				if mathx.Argmax(row) >= (k+1)/2 {
					t = 1 / fa.Param
				}
			case Entropic:
				ent := 0.0
				for _, v := range row {
					if v > 0 {
						ent -= v * math.Log(v)
					}
				}
				t = math.Pow(fa.Param, 1-2*ent/math.Log(float64(k)))
			}
			mx := math.Inf(-1)
			for m, v := range row {
				switch fa.Miscalibration {
				case PriorShift:
					z[m] = math.Log(v) + logw[m]
				case OneClass:
					z[m] = math.Log(v)
					if m == 0 {
						z[m] /= t
					}
				default:
					z[m] = math.Log(v) / t
				}
				mx = math.Max(mx, z[m])
			}
			s := 0.0
			for m := range z {
				z[m] = math.Exp(z[m] - mx) // exp(-Inf) = 0 for h_m = 0
				s += z[m]
			}
			for m := range z {
				out[m] = z[m] / s
			}
		}
	}
	return dst
}

// Draw returns n predictions f (n×K), labels drawn from the truths and
// the truths h = E[y | f] (n×K). It panics on an invalid family.
func (fa Family) Draw(n int, rng *rand.Rand) (f []float64, labels []int, h []float64) {
	if err := fa.check(); err != nil {
		panic(err)
	}
	f, h = fa.sample(rng, n)
	return f, Labels(nil, h, fa.K, rng), h
}

// sample draws n truths h and returns their predictions f and h (n×K).
func (fa Family) sample(rng *rand.Rand, n int) (f, h []float64) {
	h = fa.truths(n, rng)
	return fa.Report(nil, h), h
}

// GroundTruth returns the canonical CE_q^q = E ||h - f||_q^q of the family
// (q >= 1) by Monte Carlo, as Setup.GroundTruth does (blocks of 65,536
// from PCG(seed, b), combined in order).
func (fa Family) GroundTruth(ctx context.Context, q float64, samples int, seed uint64, workers int) (GroundTruth, error) {
	if err := fa.check(); err != nil {
		return GroundTruth{}, err
	}
	if !(q >= 1) || samples < 2 {
		return GroundTruth{}, fmt.Errorf("synth: ground truth: q = %v, %d samples", q, samples)
	}
	return monteCarlo(ctx, samples, seed, workers, func(rng *rand.Rand, m int, out []float64) {
		f, h := fa.sample(rng, m)
		lqPowers(out, h, f, fa.K, q)
	})
}

// Distortion is a setting of the variational paper's synthetic multiclass
// experiments (Berta et al. 2026; ElSacho/Evaluating_Lp_Calibration_Errors,
// code/calibration_generators.py): predictions f ~ Dirichlet(Alpha 1_K)
// (0.5 in the paper), the truth h = H(f) computed from f, labels y ~
// Categorical(h); the canonical L1 error is E||h - f||_1. H is one of the
// paper's functions of z = log f (clipped below at the log of float64's
// smallest normal, as its multiclass_probs_to_logits does):
// "perfectly_calibrated_mc" (h = f), "overconfident_mc" (softmax(0.3 z)),
// "underconfident_mc" (softmax(2 z)), "harmonic_distortion_mc"
// (softmax(z + 0.5 sin(5 z))).
type Distortion struct {
	K     int
	Alpha float64
	H     string
}

// DistortionNames lists the paper's functions.
var DistortionNames = []string{"perfectly_calibrated_mc", "overconfident_mc", "underconfident_mc", "harmonic_distortion_mc"}

func (d Distortion) check() error {
	if d.K < 2 || !(d.Alpha > 0) || math.IsInf(d.Alpha, 0) {
		return fmt.Errorf("synth: distortion K = %d, alpha %v", d.K, d.Alpha)
	}
	for _, n := range DistortionNames {
		if n == d.H {
			return nil
		}
	}
	return fmt.Errorf("synth: unknown distortion %q", d.H)
}

// truth writes H(f) of the rows of f to h.
func (d Distortion) truth(h, f []float64) {
	k := d.K
	z := make([]float64, k)
	floor := math.Log(0x1p-1022)
	for i := 0; i < len(f); i += k {
		for j, p := range f[i : i+k] {
			u := math.Max(math.Log(p), floor)
			switch d.H {
			case "overconfident_mc":
				u *= 0.3
			case "underconfident_mc":
				u *= 2
			case "harmonic_distortion_mc":
				u += 0.5 * math.Sin(5*u)
			}
			z[j] = u
		}
		if d.H == "perfectly_calibrated_mc" {
			copy(h[i:i+k], f[i:i+k])
			continue
		}
		mx := math.Inf(-1)
		for _, u := range z {
			mx = math.Max(mx, u)
		}
		s := 0.0
		for j := range z {
			z[j] = math.Exp(z[j] - mx)
			s += z[j]
		}
		for j := range z {
			h[i+j] = z[j] / s
		}
	}
}

// Draw returns n predictions (n×K), labels drawn from the truths and the
// truths. It panics on an invalid setting.
func (d Distortion) Draw(n int, rng *rand.Rand) (f []float64, labels []int, h []float64) {
	if err := d.check(); err != nil {
		panic(err)
	}
	f, h = d.sample(rng, n)
	return f, Labels(nil, h, d.K, rng), h
}

// sample draws n predictions f ~ Dir(Alpha) and returns f and h = H(f)
// (n×K).
func (d Distortion) sample(rng *rand.Rand, n int) (f, h []float64) {
	f = Dirichlet(make([]float64, n*d.K), d.K, d.Alpha, rng)
	h = make([]float64, len(f))
	d.truth(h, f)
	return f, h
}

// GroundTruth returns E||h - f||_q^q by Monte Carlo, as Family.GroundTruth.
func (d Distortion) GroundTruth(ctx context.Context, q float64, samples int, seed uint64, workers int) (GroundTruth, error) {
	if err := d.check(); err != nil {
		return GroundTruth{}, err
	}
	if !(q >= 1) || samples < 2 {
		return GroundTruth{}, fmt.Errorf("synth: ground truth: q = %v, %d samples", q, samples)
	}
	return monteCarlo(ctx, samples, seed, workers, func(rng *rand.Rand, m int, out []float64) {
		f, h := d.sample(rng, m)
		lqPowers(out, h, f, d.K, q)
	})
}
