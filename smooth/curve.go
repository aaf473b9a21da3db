package smooth

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/numpy"
	"github.com/calib-dev/calib/internal/parallel"
)

// CurveOptions are the options of NewCurve. The zero value is relplot's
// diagram: sigma*, 200 points, a 95 % band from 200 resamples.
type CurveOptions struct {
	// Sigma, if not 0, is the bandwidth in (0, 1]; 0 means the fixed
	// point sigma* of ECE (relplot's prepare_rel_diagram).
	Sigma float64
	// Points is the number of equally spaced points of [0, 1], ends
	// included; 0 means 200 (relplot's plot_mesh_pts).
	Points int
	// Resamples is the number of bootstrap resamples of the band; 0
	// means 200 (relplot's num_bootstrap), -1 no band.
	Resamples int
	// Level of the band, in (0, 1); 0 means 0.95.
	Level float64
	// Seed: resample b draws n rows uniformly with replacement from
	// PCG(Seed, b), as metric.Bootstrap does.
	Seed uint64
	// Workers is the number of goroutines of the band; 0 means
	// GOMAXPROCS. The curve is bit-identical for every value.
	Workers int
}

// Curve is the smooth reliability diagram of Błasiok and Nakkiran
// (relplot's rel_diagram): at each point t of the mesh, the kernel
// regression of the outcomes on the scores,
//
//	Mean(t) = sum_i w_i y_i K_sigma(t, f_i) / (sum_i w_i K_sigma(t, f_i) + 1e-4)
//
// (relplot's KernelSmoother with the reflected Gaussian of the smooth
// ECE, the same grid and density floor), the density of the scores
//
//	Density(t) = sum_i (w_i/n) K_sigma(t, f_i)
//
// (relplot's GaussianKernel.kde; relplot draws the curve wider where the
// density is higher), and the band: the
// (1-Level)/2 and (1+Level)/2 quantiles (NumPy's linear interpolation)
// of Mean refitted on bootstrap resamples, sigma fixed. relplot draws the
// mean of its bootstrap fits (sklearn's BaggingRegressor) as the curve;
// Mean here is the fit on the full sample, so that it is reproducible
// and equals relplot's KernelSmoother.
type Curve struct {
	Sigma   float64   // the bandwidth
	Value   float64   // smECE at Sigma
	T       []float64 // the mesh
	Mean    []float64 // E[y | f = t]
	Density []float64 // the density of the scores at t
	// Lo and Hi are the band (nil with Resamples -1).
	Lo, Hi    []float64
	Level     float64
	Resamples int
}

// NewCurve returns the smooth reliability diagram of the scores f and
// outcomes y with the sample weights w (nil: all 1), with the smooth ECE
// at its bandwidth. Inputs are checked as by ECE.
func NewCurve(ctx context.Context, f, y, w []float64, o CurveOptions) (*Curve, error) {
	s, err := newSample(f, y, w)
	if err != nil {
		return nil, err
	}
	r, err := s.ece(ctx, Options{Sigma: o.Sigma})
	if err != nil {
		return nil, err
	}
	points := o.Points
	if points == 0 {
		points = 200
	}
	if points < 2 {
		return nil, fmt.Errorf("%w: %d curve points", ErrInput, points)
	}
	c := &Curve{Sigma: r.Sigma, Value: r.Value, T: numpy.Linspace(0, 1, points)}
	c.Mean = s.mean(r.Sigma, c.T)
	c.Density = s.density(r.Sigma, c.T)
	if o.Resamples < 0 {
		return c, nil
	}
	nb, level := mathx.ResampleDefaults(o.Resamples, o.Level)
	if nb < 2 || !(level > 0 && level < 1) {
		return nil, fmt.Errorf("%w: band of %d resamples at level %v", ErrInput, nb, level)
	}
	n := len(f)
	fits := make([][]float64, nb)
	err = parallel.ForContext(ctx, nb, o.Workers, func() []int { return make([]int, n) }, func(idx []int, b int) {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(b)))
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		rf, ry, rw := make([]float64, n), make([]float64, n), []float64(nil)
		if w != nil {
			rw = make([]float64, n)
		}
		for j, i := range idx {
			rf[j], ry[j] = f[i], y[i]
			if w != nil {
				rw[j] = w[i]
			}
		}
		rs, err := newSample(rf, ry, rw)
		if err != nil { // a resample of weight 0 only: no fit
			return
		}
		fits[b] = rs.mean(r.Sigma, c.T)
	})
	if err != nil {
		return nil, fmt.Errorf("smooth: curve band: %w", err)
	}
	fits = slices.DeleteFunc(fits, func(m []float64) bool { return m == nil })
	if len(fits) < 2 {
		return nil, fmt.Errorf("%w: curve band: %d of %d resamples have a point of positive weight", ErrInput, len(fits), nb)
	}
	c.Lo, c.Hi = make([]float64, points), make([]float64, points)
	col := make([]float64, len(fits))
	for k := range c.T {
		for b, m := range fits {
			col[b] = m[k]
		}
		slices.Sort(col)
		c.Lo[k], c.Hi[k] = mathx.Quantile(col, (1-level)/2), mathx.Quantile(col, (1+level)/2)
	}
	c.Level, c.Resamples = level, nb
	return c, nil
}

// mean is relplot's KernelSmoother(ReflectedGaussianKernel(sigma))
// .predict(t): smooth(f, y, t)'s ratio.
func (s *sample) mean(sigma float64, t []float64) []float64 {
	g := gridSize(sigma)
	ys, ones := make([]float64, g), make([]float64, g)
	splat(ys, s.f, s.y, s.w)
	splat(ones, s.f, nil, s.w)
	c := newKernel(sigma, g, true).convolve(ys, ones)
	m, d := interpolate(t, c[0]), interpolate(t, c[1])
	for k := range m {
		m[k] /= d[k] + densityFloor
	}
	return m
}

// density is relplot's ReflectedGaussianKernel(sigma).kde(f, t)
// (GaussianKernel.kde): the smoothing of the weights 1/n, no floor.
func (s *sample) density(sigma float64, t []float64) []float64 {
	g := gridSize(sigma)
	wn := make([]float64, len(s.f))
	for i := range wn {
		wn[i] = 1 / float64(len(s.f))
		if s.w != nil {
			wn[i] = s.w[i] / float64(s.n)
		}
	}
	dv := make([]float64, g)
	splat(dv, s.f, wn, nil)
	return interpolate(t, newKernel(sigma, g, true).convolve(dv)[0])
}
