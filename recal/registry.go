package recal

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/calib-dev/calib/data"
)

// Method names a recalibration method. Its text form is the name used by
// the map files, `calib fit --method` and `calib compare --methods`; it
// implements encoding.TextMarshaler and TextUnmarshaler, so it works with
// flag.TextVar and JSON.
type Method string

// The methods (MethodVector, MethodMatrix and MethodDirichlet are declared
// with the linear maps).
const (
	MethodSpline      Method = "spline"      // Gupta et al. 2021, FitSpline
	MethodTemperature Method = "temperature" // FitTemperature; needs logits
	MethodIsotonic    Method = "isotonic"    // FitIsotonic
	MethodHistogram   Method = "histogram"   // FitHistogram
	MethodPlatt       Method = "platt"       // FitPlatt
	MethodBeta        Method = "beta"        // FitBeta
)

// Methods returns every method, in the order of the comparison tables.
func Methods() []Method { return slices.Clone(methodList) }

var methodList = []Method{MethodSpline, MethodTemperature, MethodVector, MethodMatrix, MethodDirichlet,
	MethodIsotonic, MethodHistogram, MethodPlatt, MethodBeta, MethodLogSpline, MethodBoost}

// String returns the method's name.
func (m Method) String() string { return string(m) }

// MarshalText returns the method's name.
func (m Method) MarshalText() ([]byte, error) { return []byte(m), nil }

// UnmarshalText sets m from a method name, or fails naming the valid ones.
func (m *Method) UnmarshalText(b []byte) error {
	p, err := ParseMethod(string(b))
	if err != nil {
		return err
	}
	*m = p
	return nil
}

// ParseMethod returns the method named s (surrounding spaces ignored).
func ParseMethod(s string) (Method, error) {
	m := Method(strings.TrimSpace(s))
	if !slices.Contains(methodList, m) {
		return "", fmt.Errorf("%w: unknown recalibration method %q (valid: %s)", ErrInput, s, strings.Join(MethodNames(), ", "))
	}
	return m, nil
}

// ParseMethods parses a comma-separated list of method names (surrounding
// spaces and empty items ignored); "" means every method (Methods), a list
// of empty items none (an empty, non-nil slice). Its error reads `unknown
// method "x" (valid: spline, ...)` and wraps ErrInput.
func ParseMethods(list string) ([]Method, error) {
	if list == "" {
		return slices.Clone(methodList), nil
	}
	ms := []Method{}
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !slices.Contains(methodList, Method(m)) {
			return nil, &kindError{fmt.Sprintf("unknown method %q (valid: %s)", m, strings.Join(MethodNames(), ", ")), ErrInput}
		}
		ms = append(ms, Method(m))
	}
	return ms, nil
}

// MethodNames returns the names of Methods, in their order.
func MethodNames() []string {
	names := make([]string, len(methodList))
	for i, m := range methodList {
		names[i] = string(m)
	}
	return names
}

// NeedsLogits reports whether the method maps logits and cannot be fitted
// on probabilities alone (temperature, vector and matrix scaling).
func (m Method) NeedsLogits() bool {
	return m == MethodTemperature || m == MethodVector || m == MethodMatrix
}

// FitOptions configures Fit. The zero value fits every method as `calib fit`
// does without flags: the spline with 6 knots, 15 histogram bins, the
// scalar methods on the top-label confidence, and the linear maps with
// lambda and mu chosen by cross-validation (seed 0, the default grid).
type FitOptions struct {
	Spline    SplineOptions    // spline
	LogSpline LogSplineOptions // log-spline
	Boost     BoostOptions     // boost
	// Linear configures vector, matrix-odir and dirichlet-odir. Unless
	// FixedRegularization is set, Linear.CV is turned on (lambda and mu
	// cross-validated) and Linear.Lambda and Linear.Mu are not used.
	Linear              LinearOptions
	FixedRegularization bool
	Bins                int    // histogram: equal-mass bins; 0 means DefaultHistogramBins
	ScalarMode          string // isotonic, histogram, platt, beta: "" (top_label), "binary" or "one_vs_rest" (isotonic)
}

// Fit fits method on the set s (its probabilities, its logits where the
// method reads them, its labels, its sample weights s.Weights (nil: all 1;
// see each Fit function for how it weights); a one-column binary logit z
// counts as the two logits (0, z)). Rows whose sum the loader accepted
// within a looser tolerance than the maps' (SumTolerance per class) are
// divided by their sum first. Errors of the input wrap ErrInput; bad
// weights wrap data.ErrWeights too.
func Fit(ctx context.Context, method Method, s *data.Set, o FitOptions) (Calibrator, error) {
	if _, err := ParseMethod(string(method)); err != nil {
		return nil, err
	}
	if method.NeedsLogits() && s.Logits == nil {
		return nil, fmt.Errorf("%w: %s needs logits", ErrInput, method)
	}
	if err := checkWeights(s.Weights, s.N); err != nil {
		return nil, fmt.Errorf("recal: %s: %w", method, err)
	}
	if s.Weights != nil {
		s = s.ScaledWeights() // their normalised form: any common factor, the same map
	}
	s = ready(s)
	w := s.Weights
	switch method {
	case MethodSpline:
		return FitSpline(s.Probs, s.Labels, s.K, w, o.Spline)
	case MethodTemperature:
		return FitTemperature(TwoColumnLogits(s), s.Labels, s.K, w)
	case MethodVector, MethodMatrix, MethodDirichlet:
		lo := o.Linear
		if !o.FixedRegularization {
			lo.CV = true
		}
		return FitLinear(ctx, string(method), s.Probs, TwoColumnLogits(s), s.Labels, s.K, w, lo)
	case MethodLogSpline:
		return FitLogSpline(ctx, s.Probs, TwoColumnLogits(s), s.Labels, s.K, w, o.LogSpline)
	case MethodBoost:
		return FitBoost(ctx, s.Probs, TwoColumnLogits(s), s.Labels, s.K, w, o.Boost)
	case MethodIsotonic:
		return FitIsotonic(s.Probs, s.Labels, s.K, o.ScalarMode, w)
	case MethodHistogram:
		return FitHistogram(s.Probs, s.Labels, s.K, o.Bins, o.ScalarMode, w)
	case MethodPlatt:
		return FitPlatt(s.Probs, s.Labels, s.K, o.ScalarMode, w)
	case MethodBeta:
		return FitBeta(s.Probs, s.Labels, s.K, o.ScalarMode, w)
	}
	panic("recal: unreachable")
}

// Apply returns a copy of s whose probabilities are c's (K columns, no
// logits, not binary any more), with the same conventions as Fit. Its
// errors are about the input (c, loaded and checked, refuses only input it
// cannot take): they wrap ErrInput and start with s's file name, if any.
func Apply(c Calibrator, s *data.Set) (*data.Set, error) {
	s = ready(s)
	p, err := c.Calibrate(s.Probs, TwoColumnLogits(s), s.K)
	if err != nil {
		if s.File != "" {
			err = fmt.Errorf("%s: %w", s.File, err)
		}
		return nil, asInput(err)
	}
	out := *s
	out.Probs, out.Logits, out.Binary = p, nil, false
	return &out, nil
}

// newMap returns an empty map of the method's type (for Load), or nil for
// an unknown method.
func newMap(m Method) Calibrator {
	switch m {
	case MethodTemperature:
		return &Temperature{}
	case MethodSpline:
		return &Spline{}
	case MethodIsotonic:
		return &Isotonic{}
	case MethodHistogram:
		return &Histogram{}
	case MethodPlatt:
		return &Platt{}
	case MethodBeta:
		return &Beta{}
	case MethodVector, MethodMatrix, MethodDirichlet:
		return &Linear{}
	case MethodLogSpline:
		return &LogSpline{}
	case MethodBoost:
		return &Boost{}
	}
	return nil
}

// TwoColumnLogits returns the logits of s with K columns: a one-column
// binary logit z becomes (0, z), whose softmax is (1 - sigmoid(z),
// sigmoid(z)); nil when s has no logits.
func TwoColumnLogits(s *data.Set) []float64 {
	if !s.Binary || s.Logits == nil {
		return s.Logits
	}
	z := make([]float64, 2*s.N)
	for i, v := range s.Logits {
		z[2*i+1] = v
	}
	return z
}

// ready returns s, or a copy whose rows off by more than half the maps'
// row-sum tolerance are divided by their sum, so that what the loader took
// (under a looser --tolerance) the fits and maps take too.
func ready(s *data.Set) *data.Set {
	var probs []float64
	for i := 0; i < s.N; i++ {
		row := s.Probs[i*s.K : (i+1)*s.K]
		sum := 0.0
		for _, v := range row {
			sum += v
		}
		if math.Abs(sum-1) > SumTolerance*float64(s.K)/2 && sum > 0 {
			if probs == nil {
				probs = slices.Clone(s.Probs)
			}
			for k := range row {
				probs[i*s.K+k] = row[k] / sum
			}
		}
	}
	if probs == nil {
		return s
	}
	c := *s
	c.Probs = probs
	return &c
}
