package smooth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/numpy"
)

// Convention names whose smooth ECE is computed (see the package doc).
type Convention int

const (
	// Relplot is relplot 1.0.2 and 1.0.3: the smooth ECE on the mesh with
	// the density division (the default).
	Relplot Convention = iota
	// Relplot101 is relplot 1.0 and 1.0.1 (smECE_fast): the mean absolute
	// smoothed residual on a grid of 200 x 4^k points.
	Relplot101
)

var conventionNames = [...]string{Relplot: "relplot", Relplot101: "relplot-1.0.1"}

// String returns the convention's name: "relplot" or "relplot-1.0.1".
func (c Convention) String() string {
	if c < 0 || int(c) >= len(conventionNames) {
		return fmt.Sprintf("Convention(%d)", int(c))
	}
	return conventionNames[c]
}

// MarshalText implements encoding.TextMarshaler.
func (c Convention) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "relplot" (also
// "relplot-1.0.3" and "relplot-1.0.2") or "relplot-1.0.1" (also
// "relplot-1.0").
func (c *Convention) UnmarshalText(b []byte) error {
	switch strings.TrimSpace(string(b)) {
	case "relplot", "relplot-1.0.3", "relplot-1.0.2":
		*c = Relplot
	case "relplot-1.0.1", "relplot-1.0":
		*c = Relplot101
	default:
		return fmt.Errorf("smooth: unknown convention %q (valid: relplot, relplot-1.0.1)", b)
	}
	return nil
}

// MinSigma is the smallest bandwidth ECE takes: its grid has
// 10/MinSigma points (memory and time grow as 1/sigma; relplot's search
// never goes below 2/1024).
const MinSigma = 1e-4

// DefaultEps is relplot's eps of smECE: a sigma below it counts as below
// the fixed point without being computed.
const DefaultEps = 0.001

// Options are the options of ECE. The zero value is relplot 1.0.3's smECE.
type Options struct {
	// Sigma, if not 0, is the bandwidth in [MinSigma, 1] at which the
	// smooth ECE is computed (relplot's smECE_sigma); 0 means the fixed
	// point sigma*.
	Sigma float64
	// Eps is the search's floor (relplot's eps); 0 means DefaultEps.
	Eps float64
	// Convention is the version of relplot reproduced; the zero value is
	// Relplot (1.0.2 and 1.0.3).
	Convention Convention
}

// Result is a smooth ECE.
type Result struct {
	// Value is smECE at Sigma.
	Value float64
	// Sigma is the bandwidth: Options.Sigma, or the fixed point sigma*.
	Sigma float64
	// Evaluations is the number of bandwidths at which the smooth ECE was
	// computed (1 at a given sigma; at most 11 for the fixed point, 12
	// with Relplot101, which recomputes the last on its final grid).
	Evaluations int
}

// ErrInput is wrapped by the errors of input that has no smooth ECE: no
// point of positive weight, or a score or outcome outside [0, 1].
var ErrInput = errors.New("smooth: invalid input")

// ECE returns the smooth ECE of the scores f against the outcomes y, with
// the sample weights w (nil: all 1): smECE at the fixed point sigma* =
// smECE_sigma*, or at Options.Sigma (see the package doc for the exact
// definition). f, y and w must have the same length (it panics
// otherwise); the scores and outcomes must lie in [0, 1] and the weights
// be finite and >= 0 with one positive, else the error wraps ErrInput
// (weights: mathx.ErrWeights). ctx is checked between bandwidths.
func ECE(ctx context.Context, f, y, w []float64, o Options) (Result, error) {
	s, err := newSample(f, y, w)
	if err != nil {
		return Result{}, err
	}
	return s.ece(ctx, o)
}

// ece is ECE of the checked sample.
func (s *sample) ece(ctx context.Context, o Options) (Result, error) {
	if !(o.Sigma == 0 || (o.Sigma >= MinSigma && o.Sigma <= 1)) {
		return Result{}, fmt.Errorf("%w: sigma %v is not in [%g, 1]", ErrInput, o.Sigma, MinSigma)
	}
	eps := o.Eps
	if eps == 0 {
		eps = DefaultEps
	}
	var m measure
	switch o.Convention {
	case Relplot:
		m = s
	case Relplot101:
		m = &fastSample{sample: s, g: 200}
	default:
		return Result{}, fmt.Errorf("smooth: unknown convention %v", o.Convention)
	}
	if o.Sigma != 0 {
		m.visit(o.Sigma)
		return Result{Value: m.at(o.Sigma), Sigma: o.Sigma, Evaluations: 1}, nil
	}
	return fixedPoint(ctx, m, eps)
}

// measure is the smooth ECE of a convention as a function of sigma.
type measure interface {
	// visit is called for each sigma the search considers, before the
	// eps test (relplot 1.0.1 grows its grid there).
	visit(sigma float64)
	// at returns the smooth ECE at sigma.
	at(sigma float64) float64
	// final reports whether the final value is recomputed rather than
	// taken from the search (relplot 1.0.1: the grid may have grown).
	final() bool
}

// fixedPoint is relplot's smECE: search_param(alpha < eps or alpha <
// smECE_alpha, start=1, refine=10), then smECE at the result.
func fixedPoint(ctx context.Context, m measure, eps float64) (Result, error) {
	r := Result{}
	values := map[float64]float64{}
	below := func(alpha float64) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		m.visit(alpha)
		if alpha < eps {
			return true, nil
		}
		v := m.at(alpha)
		values[alpha] = v
		r.Evaluations++
		return alpha < v, nil
	}
	sigma := 1.0
	ok, err := below(1)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		hi, lo := 1.0, 0.0
		for range 10 {
			mid := (hi + lo) / 2
			in, err := below(mid)
			if err != nil {
				return Result{}, err
			}
			if in {
				lo = mid
			} else {
				hi = mid
			}
		}
		sigma = hi
	}
	v, ok := values[sigma]
	if !ok || m.final() { // sigma = 1 short-circuited by eps > 1, or a grown grid
		v = m.at(sigma)
		r.Evaluations++
	}
	r.Value, r.Sigma = v, sigma
	return r, nil
}

// sample holds validated data and the grids splatted from it, per grid
// size.
type sample struct {
	f, y, r, w []float64 // r_i = f_i - y_i; w normalised to sum to the rows of positive weight (nil: all 1)
	n          int       // rows of positive weight
	grids      map[int][2][]float64
}

func newSample(f, y, w []float64) (*sample, error) {
	if len(y) != len(f) || (w != nil && len(w) != len(f)) {
		panic("smooth: length mismatch")
	}
	if err := mathx.CheckWeights(w, len(f)); err != nil {
		return nil, err
	}
	n := mathx.PositiveRows(w, len(f))
	if n == 0 {
		return nil, fmt.Errorf("%w: no points", ErrInput)
	}
	r := make([]float64, len(f))
	for i, fi := range f {
		if !(fi >= 0 && fi <= 1) {
			return nil, fmt.Errorf("%w: score %d is %v, not in [0, 1]", ErrInput, i, fi)
		}
		if !(y[i] >= 0 && y[i] <= 1) {
			return nil, fmt.Errorf("%w: outcome %d is %v, not in [0, 1]", ErrInput, i, y[i])
		}
		r[i] = fi - y[i]
	}
	s := &sample{f: f, y: y, r: r, n: n, grids: map[int][2][]float64{}}
	if w != nil {
		scaled, _ := mathx.ScaleWeights(w)
		total := mathx.WeightSum(scaled, len(f))
		s.w = make([]float64, len(w))
		for i, v := range scaled {
			s.w[i] = v * (float64(n) / total)
		}
	}
	return s, nil
}

// grid returns the residuals and the ones splatted on g points.
func (s *sample) grid(g int) (res, dens []float64) {
	if c, ok := s.grids[g]; ok {
		return c[0], c[1]
	}
	if s.f == nil {
		panic(fmt.Sprintf("smooth: the summed grids lack %d points", g)) // searchGrids is wrong
	}
	res, dens = make([]float64, g), make([]float64, g)
	splat(res, s.f, s.r, s.w)
	splat(dens, s.f, nil, s.w)
	s.grids[g] = [2][]float64{res, dens}
	return res, dens
}

// smoothed returns relplot's ReflectedGaussianKernel(sigma).smooth(f, v,
// t) for v the residuals (R/(D+eps)) and the floored density D+eps at
// the points t, and the smoothed ones (D, unfloored) on the grid.
func (s *sample) smoothed(sigma float64, t []float64) (ratio, dens []float64) {
	g := gridSize(sigma)
	res, ones := s.grid(g)
	c := newKernel(sigma, g, false).convolve(res, ones)
	rt, dt := interpolate(t, c[0]), interpolate(t, c[1])
	for k := range dt {
		dt[k] += densityFloor
		rt[k] /= dt[k]
	}
	return rt, dt
}

func (s *sample) visit(float64) {}
func (s *sample) final() bool   { return false }

// at is relplot's smooth_ece(f, y, sigma): np.sum(np.abs(rs) * density)
// / np.sum(density) on the mesh.
func (s *sample) at(sigma float64) float64 {
	rt, dt := s.smoothed(sigma, numpy.Linspace(0, 1, meshSize(sigma)))
	abs := make([]float64, len(rt))
	for k, v := range rt {
		abs[k] = math.Abs(v) * dt[k]
	}
	return numpy.Sum(abs) / numpy.Sum(dt)
}

// fastSample is relplot 1.0.1's smECE_fast: its grid of g points grows by
// 4 while round(20/sigma) exceeds it (recalculate_if_necessary) and
// never shrinks.
type fastSample struct {
	*sample
	g int
}

func (s *fastSample) visit(sigma float64) {
	for roundHalfEven(20/sigma) > s.g {
		s.g *= 4
	}
}

func (s *fastSample) final() bool { return true }

// at is relplot 1.0.1's smooth_ece_interpolated(r_values, sigma) with
// r_values = smooth_round_to_grid(f, f - y, g) / len(f):
// np.sum(np.abs(convolve(r_values))) / g.
func (s *fastSample) at(sigma float64) float64 {
	res, _ := s.grid(s.g)
	r := make([]float64, s.g)
	for i, v := range res {
		r[i] = v / float64(s.n)
	}
	c := newKernel(sigma, s.g, false).convolve(r)[0]
	for i, v := range c {
		c[i] = math.Abs(v)
	}
	return numpy.Sum(c) / float64(s.g)
}
