package recal

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/optimize"

	"github.com/calib-dev/calib/internal/kernel"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/progress"
)

// Linear-family methods.
const (
	MethodVector    = "vector"         // z' = w ⊙ z + b on logits
	MethodMatrix    = "matrix-odir"    // z' = W z + b on logits, ODIR
	MethodDirichlet = "dirichlet-odir" // z' = W ln p + b, ODIR (Kull et al. 2019)
)

// DirichletClip is the clip of the probabilities before the log of
// Dirichlet calibration.
const DirichletClip = 2.2e-16

// Linear is vector scaling (method "vector", input "logits", W diagonal),
// matrix scaling with ODIR (method "matrix-odir", input "logits") or
// Dirichlet calibration with ODIR (method "dirichlet-odir", input
// "probabilities", x = ln max(p, 2.2e-16)): probabilities =
// softmax(W x + b). JSON: "w" (K entries for vector scaling, K×K row-major
// otherwise), "b" (K), and the regularisation used, "lambda" and "mu".
type Linear struct {
	Header
	W      []float64 `json:"w"`
	B      []float64 `json:"b"`
	Lambda float64   `json:"lambda"`
	Mu     float64   `json:"mu"`
}

// LinearOptions configures FitLinear.
type LinearOptions struct {
	// Lambda and Mu are the ODIR weights of the squared off-diagonal
	// weights and the squared intercepts. When CV is true they are chosen
	// by stratified k-fold cross-validation (mean held-out NLL) instead.
	Lambda, Mu float64
	CV         bool
	// Grid is "default" (lambda, mu in 10^{-4..2} for K <= 10, 10^{-2..2}
	// above; 3 folds) or "full" (Kull et al.: lambda in {1, 0.25, 0.5} x
	// 10^i, mu in 10^i, i from -5 (K <= 10) or -2 (K > 10) to 6; 5 folds).
	Grid string
	// Normalize divides lambda by K(K-1) and mu by K (the formula of Kull
	// et al.'s paper; dirichletcal's default does not).
	Normalize bool
	Seed      uint64 // fold assignment
	Workers   int
	// Progress, if not nil, is called after each cross-validation fit
	// with the number done and the total.
	Progress progress.Func
	ctx      context.Context // the call's context, its first argument

	// loose marks the fits inside cross-validation, which only rank the
	// grid points: they stop at a gradient of 1e-4 or after 100 iterations.
	loose bool
}

// linearInput returns the features x (n×k) of a method.
func linearInput(method string, probs, logits []float64, k int) []float64 {
	if method == MethodDirichlet {
		if len(probs) == 0 {
			probs = softmaxRows(logits, k)
		}
		x := make([]float64, len(probs))
		for i, p := range probs {
			x[i] = math.Log(math.Max(p, DirichletClip))
		}
		return x
	}
	return logitsOf(probs, logits)
}

// FitLinear fits a linear-family map on validation predictions (probs n×k,
// logits n×k or nil), labels and sample weights (nil: all 1) by minimising
// the weighted mean NLL plus the ODIR penalty,
//
//	sum_i w_i [logsumexp(W x_i + b) - (W x_i + b)_{y_i}] / sum_i w_i
//	  + lambda sum_{r != m} W_rm^2 + mu sum_r b_r^2
//
// (lambda = 0 for vector scaling; see LinearOptions.Normalize). Malformed
// input wraps ErrInput (an unknown method or grid, K < 2, predictions that
// are not n×k, probabilities not in [0, 1] or whose rows do not sum to 1
// within K * SumTolerance, logits that are not finite, labels outside
// 0..K-1, a negative or non-finite lambda or mu, bad weights, which wrap
// data.ErrWeights too); fewer than 2 samples of weight > 0, a single class
// among them, or (CV) a cross-validation fold with no held-out or no
// training sample of weight > 0 wraps ErrTooFew. Cross-validation assigns
// rows to folds as without weights and scores each fold by its weighted
// mean held-out NLL. A cancelled ctx stops the fit with an error
// wrapping its Err().
func FitLinear(ctx context.Context, method string, probs, logits []float64, labels []int, k int, weights []float64, o LinearOptions) (*Linear, error) {
	o.ctx = ctx
	input := InputLogits
	switch method {
	case MethodVector, MethodMatrix:
	case MethodDirichlet:
		input = InputProbabilities
	default:
		return nil, fmt.Errorf("recal: %w: unknown linear method %q", ErrInput, method)
	}
	// The logits are read when given, except by Dirichlet calibration given
	// probabilities.
	readLogits := len(logits) > 0 && (method != MethodDirichlet || len(probs) == 0)
	if err := checkFitInput(probs, logits, labels, k, readLogits, weights); err != nil {
		return nil, fmt.Errorf("recal: %s: %w", method, err)
	}
	if err := checkLinearData(labels, weights, o); err != nil {
		return nil, fmt.Errorf("recal: %s: %w", method, err)
	}
	if o.ctx == nil {
		o.ctx = context.Background()
	}
	x := linearInput(method, probs, logits, k)
	lam, mu := o.Lambda, o.Mu
	if method == MethodVector {
		lam = 0 // no off-diagonal weights
	}
	if o.CV && method != MethodVector {
		var err error
		if lam, mu, err = crossValidate(method, x, labels, weights, k, o); err != nil {
			return nil, err
		}
	}
	if err := o.ctx.Err(); err != nil {
		return nil, fmt.Errorf("recal: %s: %w", method, err)
	}
	w, b, err := fitLinear(newLinearData(method, x, labels, weights, k, o.Workers), lam, mu, o, nil)
	if err != nil {
		return nil, err
	}
	return &Linear{Header: Header{SchemaVersion: SchemaVersion, Method: method, Input: input, K: k}, W: w, B: b, Lambda: lam, Mu: mu}, nil
}

// checkLinearData checks what FitLinear needs beyond well-formed input: at
// least 2 samples of weight > 0 and at least 2 classes among them, finite
// lambda and mu >= 0 when they are used, a known grid when
// cross-validating.
func checkLinearData(labels []int, weights []float64, o LinearOptions) error {
	if n := mathx.PositiveRows(weights, len(labels)); n < 2 {
		if weights != nil {
			return fmt.Errorf("%w: %d samples of weight > 0, need at least 2", ErrTooFew, n)
		}
		return fmt.Errorf("%w: %d samples, need at least 2", ErrTooFew, n)
	}
	first, twoClasses := -1, false
	for i, y := range labels {
		if weights != nil && !(weights[i] > 0) {
			continue
		}
		if first < 0 {
			first = y
		} else if y != first {
			twoClasses = true
			break
		}
	}
	if !twoClasses {
		if weights != nil {
			return fmt.Errorf("%w: every label of weight > 0 is %d, need at least 2 classes", ErrTooFew, first)
		}
		return fmt.Errorf("%w: every label is %d, need at least 2 classes", ErrTooFew, first)
	}
	if o.CV {
		if o.Grid != "" && o.Grid != "default" && o.Grid != "full" {
			return fmt.Errorf("%w: grid %q (valid: default, full)", ErrInput, o.Grid)
		}
		return nil
	}
	if err := firstError(checkNumber("lambda", o.Lambda, 0), checkNumber("mu", o.Mu, 0)); err != nil {
		return fmt.Errorf("%w: %v", ErrInput, err)
	}
	return nil
}

// nparams returns the number of weights of W.
func nweights(method string, k int) int {
	if method == MethodVector {
		return k
	}
	return k * k
}

// linearData is the training data of one linear-family fit: the features
// x (n×k, row-major), labels and sample weights (nil: all 1), and for the
// BLAS objective (full W, K > 20) the transposed features and scratch
// buffers. A linearData is used by one goroutine at a time.
type linearData struct {
	method  string
	x       []float64
	labels  []int
	weights []float64
	wsum    float64 // sum of the weights (n when nil)
	k       int
	workers int
}

func newLinearData(method string, x []float64, labels []int, weights []float64, k, workers int) *linearData {
	d := &linearData{method: method, x: x, labels: labels, weights: weights, wsum: mathx.WeightSum(weights, len(labels)),
		k: k, workers: workers}
	return d
}

// fitLinear minimises the weighted mean NLL + lambda sum_{i!=j} w_ij^2 + mu
// sum_j b_j^2 by L-BFGS from init (nil: the identity map).
func fitLinear(d *linearData, lam, mu float64, o LinearOptions, init []float64) (w, b []float64, err error) {
	method, k := d.method, d.k
	nw := nweights(method, k)
	if o.Normalize {
		lam /= float64(k * (k - 1))
		mu /= float64(k)
	}
	theta := init
	if theta == nil {
		theta = make([]float64, nw+k)
		for i := 0; i < k; i++ {
			if method == MethodVector {
				theta[i] = 1
			} else {
				theta[i*k+i] = 1
			}
		}
	}
	// Stop when the gradient's largest entry is below 1e-5 or the
	// objective moved less than 1e-9 over 10 iterations (the NLL is a mean,
	// so these are relative to its per-sample scale).
	settings := &optimize.Settings{GradientThreshold: 1e-5, MajorIterations: 1000,
		Converger: &optimize.FunctionConverge{Absolute: 1e-9, Iterations: 10}}
	if o.loose {
		settings = &optimize.Settings{GradientThreshold: 1e-4, MajorIterations: 100,
			Converger: &optimize.FunctionConverge{Absolute: 1e-7, Iterations: 5}}
	}
	x, err := minimizeLBFGS(o.ctx, method, func(th, grad []float64) float64 { return d.objective(lam, mu, th, grad) }, theta, settings, 0)
	if err != nil {
		return nil, nil, err
	}
	return x[:nw], x[nw:], nil
}

// objective returns the objective at th and, if grad is not nil, its
// gradient. Samples are summed in fixed chunks of rows, in order within a
// chunk and over chunks (deterministic for any number of workers). With a
// full W (matrix, Dirichlet) a chunk's z = W x + b and its gradient
// (P - Y)^T X are each one kernel.LogKernelRows (W by column; SIMD where
// the CPU has it); the softmax is one kernel.ExpSum over the chunk and the
// bias gradient one kernel.AddWeightedRows.
func (d *linearData) objective(lam, mu float64, th, grad []float64) float64 {
	method, x, labels, k := d.method, d.x, d.labels, d.k
	n := len(labels)
	nw := nweights(method, k)
	w, b := th[:nw], th[nw:]
	full := method != MethodVector
	negb := make([]float64, k) // LogKernelRows subtracts: W x - (-b)
	for r, v := range b {
		negb[r] = -v
	}
	var wt []float64 // W by column
	if full {
		wt = make([]float64, k*k)
		for r := 0; r < k; r++ {
			for m := 0; m < k; m++ {
				wt[m*k+r] = w[r*k+m]
			}
		}
	}
	const chunk = 256
	nch := (n + chunk - 1) / chunk
	zero, ones := make([]float64, k), make([]float64, chunk)
	for i := range ones {
		ones[i] = 1
	}
	losses := make([]float64, nch)
	var grads [][]float64
	if grad != nil {
		grads = make([][]float64, nch)
	}
	parallel.For(nch, d.workers, func() []float64 { return make([]float64, 2*k*chunk+chunk) }, func(buf []float64, c int) {
		// zc: the chunk's rows of z - max z, then of e^(z - max z);
		// pt[r*nr + i]: w (P - Y) of row i0+i, class r (nr rows in the
		// chunk); zy: z_y - max z.
		zc, pt, zy := buf[:k*chunk], buf[k*chunk:2*k*chunk], buf[2*k*chunk:]
		var g []float64
		if grad != nil {
			g = make([]float64, len(th))
			grads[c] = g
		}
		i0, i1 := c*chunk, min(n, (c+1)*chunk)
		nr := i1 - i0
		if full {
			// z = W x + b for the chunk's rows at once (a register-blocked
			// product, each dot summed from 0 in order of m).
			kernel.LogKernelRows(zc[:nr*k], x[i0*k:i1*k], k, wt, k, negb, 1)
		}
		for i := i0; i < i1; i++ {
			xi, z := x[i*k:(i+1)*k], zc[(i-i0)*k:(i-i0+1)*k]
			if !full {
				for r := range z {
					z[r] = w[r]*xi[r] + b[r]
				}
			}
			m := kernel.Max(z)
			for r := range z {
				z[r] -= m
			}
			zy[i-i0] = z[labels[i]]
		}
		// Softmax and log-sum-exp from one pass of exponentials over the
		// whole chunk.
		kernel.ExpSum(zc[:nr*k], zc[:nr*k], 0)
		for i := i0; i < i1; i++ {
			e, y := zc[(i-i0)*k:(i-i0+1)*k], labels[i]
			s := 0.0
			for _, v := range e {
				s += v
			}
			l := math.Log(s) - zy[i-i0] // logsumexp(z) - z_y

			wi := 1.0
			if d.weights != nil {
				wi = d.weights[i]
				l *= wi
			}
			losses[c] += l
			if g == nil {
				continue
			}
			e[y] -= s // (e - s [r = y]) / s = P - Y
			for r, v := range e {
				e[r] = v / s * wi
			}
		}
		if g == nil {
			return
		}
		if full {
			// pt: the chunk's w_i (P - Y) by class (rows of nr),
			// transposed from zc in blocks of 8 x 8 (column writes one by
			// one would touch a cache line per entry); then (P - Y)^T X,
			// k rows of nr terms against the chunk's rows of x, each entry
			// summed from 0 in order of i.
			for a0 := 0; a0 < nr; a0 += 8 {
				for r0 := 0; r0 < k; r0 += 8 {
					for a := a0; a < min(a0+8, nr); a++ {
						for r := r0; r < min(r0+8, k); r++ {
							pt[r*nr+a] = zc[a*k+r]
						}
					}
				}
			}
			kernel.LogKernelRows(g[:k*k], pt[:k*nr], nr, x[i0*k:i1*k], k, zero, 1)
		} else {
			// The diagonal W: g_r = sum_i (P - Y)_ir x_ir, in order of i.
			for a := 0; a < nr; a++ {
				for r, v := range zc[a*k : (a+1)*k] {
					g[r] += v * x[(i0+a)*k+r]
				}
			}
		}
		// The bias gradient: sum_i (P - Y)_ir, the rows added in order.
		kernel.AddWeightedRows(g[nw:], ones[:nr], zc[:nr*k])
	})
	loss := 0.0
	for c := range losses {
		loss += losses[c]
	}
	loss /= d.wsum
	if grad != nil {
		clear(grad)
		for _, g := range grads {
			for i, v := range g {
				grad[i] += v
			}
		}
		for i := range grad {
			grad[i] /= d.wsum
		}
	}
	if method == MethodVector {
		lam = 0 // no off-diagonal weights
	}
	return loss + odirPenalty(th, k, nw, lam, mu, grad)
}

// odirPenalty returns lambda sum_{i != j} w_ij^2 + mu sum_j b_j^2 of the
// parameters th = (W, b) with nw weights (K×K when lambda > 0) and adds its
// gradient to grad (if not nil).
func odirPenalty(th []float64, k, nw int, lam, mu float64, grad []float64) float64 {
	pen := 0.0
	if lam != 0 {
		for r := 0; r < k; r++ {
			for m := 0; m < k; m++ {
				if r != m {
					v := th[r*k+m]
					pen += lam * v * v
					if grad != nil {
						grad[r*k+m] += 2 * lam * v
					}
				}
			}
		}
	}
	for r, v := range th[nw:] {
		pen += mu * v * v
		if grad != nil {
			grad[nw+r] += 2 * mu * v
		}
	}
	return pen
}

// grid returns the (lambda, mu) candidates and the number of folds.
func grid(o LinearOptions, k int) (lams, mus []float64, folds int) {
	lo := -4
	if k > 10 {
		lo = -2
	}
	if o.Grid == "full" {
		lo = -5
		if k > 10 {
			lo = -2
		}
		for i := lo; i <= 6; i++ {
			p := math.Pow(10, float64(i))
			lams = append(lams, 0.25*p, 0.5*p, p)
			mus = append(mus, p)
		}
		return lams, mus, 5
	}
	for i := lo; i <= 2; i++ {
		lams = append(lams, math.Pow(10, float64(i)))
	}
	return lams, slices.Clone(lams), 3
}

// crossValidate picks (lambda, mu) by stratified k-fold cross-validation on
// the weighted mean held-out NLL; each fit is warm-started from the same
// lambda at the previous mu (else the previous lambda). Folds are assigned
// to the rows per class from PCG(Seed, 1), whatever their weights.
func crossValidate(method string, x []float64, labels []int, weights []float64, k int, o LinearOptions) (lam, mu float64, err error) {
	lams, mus, folds := grid(o, k)
	n := len(labels)
	fold := make([]int, n)
	rng := rand.New(rand.NewPCG(o.Seed, 1))
	for c := 0; c < k; c++ {
		var idx []int
		for i, y := range labels {
			if y == c {
				idx = append(idx, i)
			}
		}
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for j, i := range idx {
			fold[i] = j % folds
		}
	}
	perFold := make([]int, folds)
	for i, f := range fold {
		if weights == nil || weights[i] > 0 {
			perFold[f]++
		}
	}
	npos := mathx.PositiveRows(weights, n)
	for f, h := range perFold {
		if h == 0 || h == npos {
			of := "samples"
			if weights != nil {
				of = "samples of weight > 0"
			}
			return 0, 0, fmt.Errorf("recal: %s: cross-validation: %w: fold %d of %d has %d of the %d %s, need at least 1 held out and 1 to train on", method, ErrTooFew, f+1, folds, h, npos, of)
		}
	}
	split := func(f int, held bool) ([]float64, []int, []float64) {
		var xs []float64
		var ys []int
		var ws []float64
		for i, y := range labels {
			if (fold[i] == f) == held {
				xs = append(xs, x[i*k:(i+1)*k]...)
				ys = append(ys, y)
				if weights != nil {
					ws = append(ws, weights[i])
				}
			}
		}
		return xs, ys, ws
	}
	o.loose = true
	// score[mi][li]: mean held-out NLL of (lams[li], mus[mi]) over folds.
	score := make([][]float64, len(mus))
	for mi := range score {
		score[mi] = make([]float64, len(lams))
	}
	total, done := int64(folds*len(mus)*len(lams)), int64(0)
	for f := 0; f < folds; f++ {
		xt, yt, wt := split(f, false)
		xh, yh, wh := split(f, true)
		train := newLinearData(method, xt, yt, wt, k, o.Workers)
		held := newLinearData(method, xh, yh, wh, k, o.Workers)
		// Warm starts: from the same lambda at the previous mu, else from
		// the previous lambda.
		prev := make([][]float64, len(lams))
		for mi, m := range mus {
			var last []float64
			for li, l := range lams {
				if err := o.ctx.Err(); err != nil {
					return 0, 0, fmt.Errorf("recal: %s: cross-validation: %w", method, err)
				}
				init := prev[li]
				if init == nil {
					init = last
				}
				w, b, err := fitLinear(train, l, m, o, init)
				if err != nil {
					return 0, 0, err
				}
				th := slices.Concat(w, b)
				prev[li], last = th, th
				score[mi][li] += held.objective(0, 0, th, nil) / float64(folds)
				if done++; o.Progress != nil {
					o.Progress(done, total)
				}
			}
		}
	}
	best := math.Inf(1)
	for mi, row := range score {
		for li, s := range row {
			if s < best {
				best, lam, mu = s, lams[li], mus[mi]
			}
		}
	}
	return lam, mu, nil
}

// Calibrate returns softmax(W x + b). A logits map given probabilities
// reads x = log p; a row whose W x + b is then not finite (log 0 = -Inf
// against a weight of the other sign) is an error wrapping ErrInput.
func (l *Linear) Calibrate(probs, logits []float64, k int) ([]float64, error) {
	n, err := l.checkInput(probs, logits, k)
	if err != nil {
		return nil, err
	}
	x := linearInput(l.Method, probs, logits, k)
	out := make([]float64, n*k)
	z := make([]float64, k)
	for i := 0; i < n; i++ {
		xi := x[i*k : (i+1)*k]
		for r := 0; r < k; r++ {
			v := l.B[r]
			if l.Method == MethodVector {
				v += l.W[r] * xi[r]
			} else {
				for m, xv := range xi {
					v += l.W[r*k+m] * xv
				}
			}
			z[r] = v
		}
		mathx.Softmax(out[i*k:(i+1)*k], z)
		for _, p := range out[i*k : (i+1)*k] {
			if math.IsNaN(p) {
				// Only from log 0 = -Inf features of a logits map given
				// probabilities: W x + b holds -Inf - (-Inf) or +Inf.
				return nil, fmt.Errorf("recal: %s map: %w: row %d: W x + b is not finite (x = log p of a probability 0): give logits", l.Method, ErrInput, i+1)
			}
		}
	}
	return out, nil
}

// valid checks the form (K or K×K weights, K intercepts) and the values:
// finite weights and intercepts, finite lambda and mu >= 0.
func (l *Linear) valid() error {
	if len(l.W) != nweights(l.Method, l.K) || len(l.B) != l.K {
		return fmt.Errorf("%d weights and %d intercepts for K = %d", len(l.W), len(l.B), l.K)
	}
	return firstError(checkFinite("w", l.W), checkFinite("b", l.B), checkNumber("lambda", l.Lambda, 0), checkNumber("mu", l.Mu, 0))
}
