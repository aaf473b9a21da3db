package recal

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/optimize"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
)

// MethodLogSpline is log-spline scaling (FitLogSpline).
const MethodLogSpline Method = "log-spline"

// LogSpline is log-spline scaling: one piecewise-linear map psi of the
// log-probability, shared by every class, plus a bias per class,
//
//	probabilities = softmax(b_k + psi(u_k)),  u_k = log p_k,
//	psi(u) = a u + sum_j c_j max(u - t_j, 0),
//
// with knots t_1 < ... < t_M. It holds temperature scaling (psi(u) = u /
// T, b = 0), a shift of the class priors (psi(u) = u, b_k = log w_k) and
// their combinations, and approximates a shared monotone map of each
// probability such as the inverse of label smoothing, psi(u) = log(e^u -
// eps / K), with K + M + 1 parameters: a reach between temperature scaling
// (1) and Dirichlet calibration (K^2 + K). u is the log-softmax of the
// logits, or log max(p, 2^-126) given probabilities. JSON: "slope" (a),
// "knots" (t), "hinges" (c), "b" (K).
type LogSpline struct {
	Header
	Slope  float64   `json:"slope"`
	Knots  []float64 `json:"knots"`
	Hinges []float64 `json:"hinges"`
	B      []float64 `json:"b"`
}

// LogSplineOptions configures FitLogSpline. The zero value places 8 knots.
type LogSplineOptions struct {
	// Knots is the number of knots M, placed at the quantiles j / (M + 1)
	// of the log-probabilities weighted by the probabilities (where the
	// probability mass lies; repeated quantiles merged); 0 means 8, -1
	// none (psi linear: temperature and bias).
	Knots int
	// Shared drops the class biases (b = 0): psi alone, the same for every
	// class, M + 1 parameters. It holds temperature scaling and
	// approximates label smoothing's inverse but not a prior shift; with
	// many classes and few rows per class it is the less noisy fit.
	Shared bool
	// Workers is the number of goroutines of the fit (0: GOMAXPROCS); the
	// map is the same for any.
	Workers int
	// Start, if not nil, is where the optimiser starts (its slope, hinges
	// and biases where the sizes match, else the identity): a map fitted
	// on similar data (another fold) saves iterations. The problem is
	// strictly convex, so the map does not depend on it beyond the
	// stopping rule.
	Start *LogSpline
}

// logSplineFloor is the smallest probability whose log LogSpline reads
// from probabilities (float32's smallest normal).
const logSplineFloor = 0x1p-126

// logSplineRidge is the weight of the squared biases and hinges in the fit:
// it fixes the biases' common level (softmax ignores it) and keeps the
// hinges of knots with little data near 0. Without it (1e-6) the fit is
// ill-conditioned: two fits of the same data with gradients below 1e-8
// differed by 1e-6 in their probabilities.
const logSplineRidge = 1e-4

// logProbs returns u = log-softmax(z) of the logits, or log max(p, 2^-126).
func logProbs(probs, logits []float64, k int) []float64 {
	u := make([]float64, max(len(probs), len(logits)))
	if len(logits) > 0 {
		for i := 0; i < len(logits); i += k {
			row := logits[i : i+k]
			m := slices.Max(row)
			s := 0.0
			for _, v := range row {
				s += math.Exp(v - m)
			}
			lse := m + math.Log(s)
			for j, v := range row {
				u[i+j] = v - lse
			}
		}
		return u
	}
	for i, p := range probs {
		u[i] = math.Log(math.Max(p, logSplineFloor))
	}
	return u
}

// FitLogSpline fits log-spline scaling on validation predictions (probs
// n×k, logits n×k or nil: read when given), labels and sample weights (nil:
// all 1) by minimising the weighted mean NLL plus 1e-4 (sum b^2 + sum c^2),
// a convex problem (the logits are linear in the parameters), by L-BFGS
// from the identity (a = 1). Errors as FitLinear's; a cancelled ctx stops
// the fit with an error wrapping its Err().
func FitLogSpline(ctx context.Context, probs, logits []float64, labels []int, k int, weights []float64, o LogSplineOptions) (*LogSpline, error) {
	readLogits := len(logits) > 0
	if err := checkFitInput(probs, logits, labels, k, readLogits, weights); err != nil {
		return nil, fmt.Errorf("recal: log-spline: %w", err)
	}
	if err := checkLinearData(labels, weights, LinearOptions{}); err != nil {
		return nil, fmt.Errorf("recal: log-spline: %w", err)
	}
	if !readLogits {
		logits = nil
	}
	m := o.Knots
	switch {
	case m == 0:
		m = 8
	case m == -1:
		m = 0
	case m < 0 || m > 255:
		return nil, fmt.Errorf("recal: log-spline: %w: %d knots", ErrInput, o.Knots)
	}
	u := logProbs(probs, logits, k)
	knots := massQuantiles(u, m, weights, k)
	d := newLogSplineData(u, labels, weights, k, knots, o.Workers)
	nb := k
	if o.Shared {
		nb = 0
	}
	th := make([]float64, 1+len(knots)+nb)
	th[0] = 1
	if st := o.Start; st != nil && len(st.Hinges) == len(knots) && (nb == 0 || len(st.B) == nb) {
		th[0] = st.Slope
		copy(th[1:], st.Hinges)
		if nb > 0 {
			copy(th[1+len(knots):], st.B)
		}
	}
	// To a gradient of 1e-8 or a change below 1e-12 over 10 iterations.
	// Near 1e-8 the objective's rounding can stop the line search: a point
	// whose gradient is below the linear maps' 1e-5 is converged.
	settings := &optimize.Settings{GradientThreshold: 1e-8, MajorIterations: 1000,
		Converger: &optimize.FunctionConverge{Absolute: 1e-12, Iterations: 10}}
	x, err := minimizeLBFGS(ctx, "log-spline", d.objective, th, settings, 1e-5)
	if err != nil {
		return nil, err
	}
	b := x[1+len(knots):]
	if o.Shared {
		b = make([]float64, k)
	}
	return &LogSpline{Header: Header{SchemaVersion: SchemaVersion, Method: string(MethodLogSpline), Input: InputLogits, K: k},
		Slope: x[0], Knots: knots, Hinges: x[1 : 1+len(knots)], B: b}, nil
}

// massQuantiles returns up to m distinct knots: the quantiles j / (m + 1)
// of the values u weighted by exp(u) (the probabilities) times the row
// weights.
func massQuantiles(u []float64, m int, weights []float64, k int) []float64 {
	if m == 0 {
		return []float64{}
	}
	type entry struct{ u, mass float64 }
	es := make([]entry, len(u))
	total := 0.0
	for i, v := range u {
		es[i] = entry{v, math.Exp(v) * mathx.Weight(weights, i/k)}
		total += es[i].mass
	}
	// Entries of equal u are interchangeable: the knot is that u.
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.u, b.u) })
	var knots []float64
	acc, j := 0.0, 1
	for _, e := range es {
		acc += e.mass
		for j <= m && acc >= total*float64(j)/float64(m+1) {
			if len(knots) == 0 || e.u > knots[len(knots)-1] {
				knots = append(knots, e.u)
			}
			j++
		}
	}
	return knots
}

// newLogSplineData returns the fit's data with each entry's bucket, the
// number of knots at or below its u.
func newLogSplineData(u []float64, labels []int, weights []float64, k int, knots []float64, workers int) *logSplineData {
	d := &logSplineData{u: u, labels: labels, weights: weights, k: k, knots: knots, workers: workers,
		wsum: mathx.WeightSum(weights, len(labels)), bucket: make([]uint8, len(u))}
	for i, v := range u {
		d.bucket[i] = uint8(sort.Search(len(knots), func(j int) bool { return knots[j] > v }))
	}
	return d
}

type logSplineData struct {
	u       []float64 // n×k log-probabilities
	bucket  []uint8   // number of knots <= u
	labels  []int
	weights []float64
	wsum    float64
	k       int
	knots   []float64
	workers int
}

// objective returns the weighted mean NLL plus the ridge at th = (a, c, b)
// and writes its gradient. psi(u) = a u + C_j u - D_j for u in bucket j
// (C, D the prefix sums of c_j and c_j t_j), so one pass costs O(nK + M).
// Rows are summed in chunks of 256 on d.workers goroutines and the
// chunks' sums added in order: the same bits for any number of workers.
func (d *logSplineData) objective(th, grad []float64) float64 {
	k, m := d.k, len(d.knots)
	a, c, b := th[0], th[1:1+m], th[1+m:]
	biased := len(b) > 0
	if !biased {
		b = make([]float64, k) // Shared: no biases
	}
	cs, ds := make([]float64, m+1), make([]float64, m+1)
	for j := range m {
		cs[j+1] = cs[j] + c[j]
		ds[j+1] = ds[j] + c[j]*d.knots[j]
	}
	const chunk = 256
	n := len(d.labels)
	nch := (n + chunk - 1) / chunk
	// Per chunk: the loss, d/da, the residual sums r and r u per bucket
	// (m + 1 each) and d/db (k).
	width := 2 + 2*(m+1) + k
	sums := make([]float64, nch*width)
	parallel.For(nch, d.workers, func() []float64 { return make([]float64, k) }, func(z []float64, ch int) {
		out := sums[ch*width : (ch+1)*width]
		r, ru, gb := out[2:2+m+1], out[2+m+1:2+2*(m+1)], out[2+2*(m+1):]
		for i := ch * chunk; i < min(n, (ch+1)*chunk); i++ {
			y := d.labels[i]
			w := mathx.Weight(d.weights, i) / d.wsum
			if w == 0 {
				continue
			}
			row, bk := d.u[i*k:(i+1)*k], d.bucket[i*k:(i+1)*k]
			mx := math.Inf(-1)
			for j, v := range row {
				z[j] = b[j] + (a+cs[bk[j]])*v - ds[bk[j]]
				mx = math.Max(mx, z[j])
			}
			zy := z[y]
			s := kernel.ExpSum(z, z, mx)
			out[0] += w * (mx + math.Log(s) - zy)
			for j := range z {
				res := z[j] / s
				if j == y {
					res--
				}
				res *= w
				gb[j] += res
				out[1] += res * row[j]
				r[bk[j]] += res
				ru[bk[j]] += res * row[j]
			}
		}
	})
	loss := 0.0
	clear(grad)
	r, ru := make([]float64, m+1), make([]float64, m+1)
	for ch := range nch {
		out := sums[ch*width : (ch+1)*width]
		loss += out[0]
		grad[0] += out[1]
		for j := range m + 1 {
			r[j] += out[2+j]
			ru[j] += out[2+m+1+j]
		}
		if biased {
			for j := range k {
				grad[1+m+j] += out[2+2*(m+1)+j]
			}
		}
	}
	// d/dc_j: the residuals of the entries above knot j times (u - t_j).
	var sr, sru float64
	for j := m; j >= 1; j-- {
		sr += r[j]
		sru += ru[j]
		grad[j] = sru - d.knots[j-1]*sr
	}
	for j := 1; j < len(th); j++ {
		loss += logSplineRidge * th[j] * th[j]
		grad[j] += 2 * logSplineRidge * th[j]
	}
	return loss
}

// minimizeLBFGS minimises f (which writes its gradient) from th by L-BFGS
// under settings; a cancelled ctx stops it with an error. It fails unless
// it stopped on the gradient, the objective's convergence or the
// iteration limit, or (settle > 0) on a failed line search where the
// gradient's largest entry is at most settle. gonum asks for the value and
// the gradient at each point by separate calls; both come from one pass
// of f, so the pass caches the gradient of the last point.
func minimizeLBFGS(ctx context.Context, name string, f func(th, grad []float64) float64, th []float64, settings *optimize.Settings, settle float64) ([]float64, error) {
	var lastX, lastG []float64
	var lastF float64
	eval := func(x []float64) {
		if lastX != nil && slices.Equal(x, lastX) {
			return
		}
		if lastG == nil {
			lastG = make([]float64, len(x))
		}
		lastF = f(x, lastG)
		lastX = append(lastX[:0], x...)
	}
	p := optimize.Problem{
		Func: func(x []float64) float64 { eval(x); return lastF },
		Grad: func(grad, x []float64) { eval(x); copy(grad, lastG) },
		Status: func() (optimize.Status, error) {
			if err := ctx.Err(); err != nil {
				return optimize.Failure, err
			}
			return optimize.NotTerminated, nil
		},
	}
	res, err := optimize.Minimize(p, slices.Clone(th), settings, &optimize.LBFGS{})
	if cerr := ctx.Err(); cerr != nil {
		return nil, fmt.Errorf("recal: %s: %w", name, cerr)
	}
	if err != nil && res == nil {
		return nil, fmt.Errorf("recal: %s: L-BFGS: %w", name, err)
	}
	settled := settle > 0 && res.Status == optimize.Failure && res.Gradient != nil && floats.Norm(res.Gradient, math.Inf(1)) <= settle
	if !settled && res.Status != optimize.GradientThreshold && res.Status != optimize.FunctionConvergence && res.Status != optimize.IterationLimit {
		return nil, fmt.Errorf("recal: %s: L-BFGS stopped with status %v (%v)", name, res.Status, err)
	}
	for _, v := range res.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("recal: %s: the fit diverged", name)
		}
	}
	return res.X, nil
}

// Calibrate returns softmax(b_k + psi(u_k)).
func (l *LogSpline) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	n, err := l.checkInput(probs, logits, k)
	if err != nil {
		return nil, err
	}
	if len(logits) == 0 {
		logits = nil
	}
	u := logProbs(probs, logits, k)
	out := make([]float64, n*k)
	z := make([]float64, k)
	for i := 0; i < n; i++ {
		for j, v := range u[i*k : (i+1)*k] {
			z[j] = l.B[j] + l.Psi(v)
			if math.IsNaN(z[j]) || math.IsInf(z[j], 0) {
				// Only from a loaded map whose finite parameters overflow.
				return nil, fmt.Errorf("recal: log-spline map: %w: row %d: b + psi(log p) = %v: the map's parameters overflow", ErrInput, i+1, z[j])
			}
		}
		mathx.Softmax(out[i*k:(i+1)*k], z)
	}
	return out, nil
}

// Psi returns psi(u) = a u + sum_j c_j max(u - t_j, 0).
func (l *LogSpline) Psi(u float64) float64 {
	v := l.Slope * u
	for j, t := range l.Knots {
		if u > t {
			v += l.Hinges[j] * (u - t)
		}
	}
	return v
}

// valid checks the form (as many hinges as knots, strictly increasing and
// finite knots, K biases) and the values (finite).
func (l *LogSpline) valid() error {
	if len(l.Hinges) != len(l.Knots) || len(l.B) != l.K {
		return fmt.Errorf("%d knots, %d hinges and %d biases for K = %d", len(l.Knots), len(l.Hinges), len(l.B), l.K)
	}
	if len(l.Knots) > 255 {
		return fmt.Errorf("%d knots, at most 255", len(l.Knots))
	}
	if err := firstError(checkNumber("slope", l.Slope, math.Inf(-1)), checkFinite("knots", l.Knots), checkFinite("hinges", l.Hinges), checkFinite("b", l.B)); err != nil {
		return err
	}
	for j := 1; j < len(l.Knots); j++ {
		if !(l.Knots[j] > l.Knots[j-1]) {
			return badValue("knots[%d] = %v is not above the knot before it", j, l.Knots[j])
		}
	}
	return nil
}
