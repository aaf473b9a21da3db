package kde

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/calib-dev/calib/data"
)

// bruteLogDirichlet is log Dir(x; alpha) written out directly from eq. 10
// with alpha = f/h + 1, with the convention 0 * log 0 = 0 (alpha_m = 1 and
// x_m = 0 contribute nothing). It shares no code with the estimator.
func bruteLogDirichlet(x, f []float64, h float64) float64 {
	lp, asum, lg := 0.0, 0.0, 0.0
	for m := range x {
		a := f[m]/h + 1
		asum += a
		g, _ := math.Lgamma(a)
		lg += g
		if a-1 != 0 {
			lp += (a - 1) * math.Log(x[m])
		}
	}
	g, _ := math.Lgamma(asum)
	return lp + g - lg
}

// bruteRatios computes r_j = sum_{i!=j} k(x_j; x_i) e_{y_i} / sum_{i!=j}
// k(x_j; x_i) point by point with math.Exp and log-sum-exp; ok[j] is false
// where every kernel is 0.
func bruteRatios(x []float64, d int, y []int, nl int, h float64) (r [][]float64, ok []bool) {
	n := len(y)
	r, ok = make([][]float64, n), make([]bool, n)
	for j := 0; j < n; j++ {
		lk := make([]float64, n)
		m := math.Inf(-1)
		for i := 0; i < n; i++ {
			if i == j {
				continue
			}
			lk[i] = bruteLogDirichlet(x[j*d:(j+1)*d], x[i*d:(i+1)*d], h)
			m = math.Max(m, lk[i])
		}
		r[j] = make([]float64, nl)
		if m == math.Inf(-1) {
			continue
		}
		ok[j] = true
		tot := 0.0
		for i := 0; i < n; i++ {
			if i != j {
				w := math.Exp(lk[i] - m)
				r[j][y[i]] += w
				tot += w
			}
		}
		for l := range r[j] {
			r[j][l] /= tot
		}
	}
	return r, ok
}

// bruteEstimate is the estimate of a notion computed by the brute-force
// ratios, following the definitions in the package documentation.
func bruteEstimate(notion Notion, probs []float64, labels []int, k int, h, p float64, classMean bool) (value float64, excluded int) {
	n := len(labels)
	lp := func(e float64) float64 { return math.Pow(math.Abs(e), p) }
	beta := func(c []float64, a []int) (float64, int) {
		x := make([]float64, 0, 2*n)
		for _, v := range c {
			x = append(x, v, 1-v)
		}
		r, ok := bruteRatios(x, 2, a, 2, h)
		sum, kept := 0.0, 0
		for j := range c {
			if ok[j] {
				sum += lp(r[j][1] - c[j])
				kept++
			}
		}
		return sum / float64(kept), n - kept
	}
	switch notion {
	case Canonical:
		r, ok := bruteRatios(probs, k, labels, k, h)
		kept := 0
		for j := range r {
			if !ok[j] {
				continue
			}
			kept++
			for l := 0; l < k; l++ {
				value += lp(r[j][l] - probs[j*k+l])
			}
		}
		return value / float64(kept), n - kept
	case ClassWise:
		for c := 0; c < k; c++ {
			col, a := make([]float64, n), make([]int, n)
			for j := range col {
				col[j] = probs[j*k+c]
				if labels[j] == c {
					a[j] = 1
				}
			}
			v, ex := beta(col, a)
			value += v
			excluded += ex
		}
		if classMean {
			value /= float64(k)
		}
		return value, excluded
	case TopLabel:
		c, a := make([]float64, n), make([]int, n)
		for j := range c {
			row := probs[j*k : (j+1)*k]
			am := 0
			for m := range row {
				if row[m] > row[am] {
					am = m
				}
			}
			c[j] = row[am]
			if am == labels[j] {
				a[j] = 1
			}
		}
		return beta(c, a)
	case Binary:
		c := make([]float64, n)
		for j := range c {
			c[j] = probs[2*j+1]
		}
		v, ex := beta(c, labels)
		return 2 * v, ex
	}
	panic("bad notion")
}

// randomSet draws n predictions on the K-simplex (softmax of Gaussian
// logits with scale sigma) and labels from a distorted version of them, so
// the predictions are miscalibrated.
func randomSet(rng *rand.Rand, n, k int, sigma float64) (probs []float64, labels []int) {
	probs, labels = make([]float64, n*k), make([]int, n)
	z, q := make([]float64, k), make([]float64, k)
	for j := 0; j < n; j++ {
		for m := range z {
			z[m] = sigma * rng.NormFloat64()
		}
		data.Softmax(probs[j*k:(j+1)*k], z)
		for m := range z {
			z[m] *= 0.6
		}
		data.Softmax(q, z)
		u, acc := rng.Float64(), 0.0
		labels[j] = k - 1
		for m, v := range q {
			if acc += v; u < acc {
				labels[j] = m
				break
			}
		}
	}
	return probs, labels
}

// TestBruteForce compares Estimate with the brute-force oracle on random
// inputs for every notion, several K, bandwidths and exponents (relative 1e-10).
func TestBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ps := []float64{1, 1.5, 2, 3}
	for _, k := range []int{2, 3, 5} {
		for _, n := range []int{2, 3, 37, 300} {
			probs, labels := randomSet(rng, n, k, 2)
			for _, h := range []float64{0.003, 0.05, 0.7} {
				for _, notion := range notionList {
					if notion == Binary && k != 2 {
						continue
					}
					for _, mean := range []bool{false, true} {
						res, err := Estimate(context.Background(), notion, probs, labels, k, nil, Options{Bandwidth: h, P: ps, ClassMean: mean})
						if err != nil {
							t.Fatalf("K=%d n=%d h=%v %s: %v", k, n, h, notion, err)
						}
						for i, p := range ps {
							want, ex := bruteEstimate(notion, probs, labels, k, h, p, mean)
							if d := relDiff(res.Values[i].Value, want); d > 1e-10 || res.Excluded != ex {
								t.Errorf("K=%d n=%d h=%v %s p=%v mean=%v: %.17g (excluded %d), brute force %.17g (excluded %d)",
									k, n, h, notion, p, mean, res.Values[i].Value, res.Excluded, want, ex)
							}
						}
					}
				}
			}
		}
	}
}

// TestBruteForceExactZeros checks the golden cases where the reference
// returns NaN (exact zeros in c06, a one-hot row in c07): we return finite
// values equal to the brute-force oracle with the 0 * log 0 = 0 convention.
func TestBruteForceExactZeros(t *testing.T) {
	n := 0
	for _, g := range loadGolden(t) {
		if !g.hasExactZeros() {
			continue
		}
		n++
		s := g.set
		for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
			for _, h := range []float64{0.001, 0.05, 0.5} {
				for _, p := range []float64{1, 2} {
					res, err := Estimate(context.Background(), notion, s.Probs, s.Labels, s.K, nil, Options{Bandwidth: h, P: []float64{p}})
					if err != nil {
						t.Fatalf("%s %s: %v", g.Case, notion, err)
					}
					want, ex := bruteEstimate(notion, s.Probs, s.Labels, s.K, h, p, false)
					got := res.Values[0].Value
					if math.IsNaN(got) || relDiff(got, want) > 1e-10 || res.Excluded != ex {
						t.Errorf("%s %s h=%v p=%v: %.17g (excluded %d), brute force %.17g (excluded %d)", g.Case, notion, h, p, got, res.Excluded, want, ex)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Error("no golden case with exact zeros or ones (the visible set has c06 and c07)")
	}
}

// TestBinaryEqualsCanonical checks the identity of the golden README: for
// K = 2, 2 x the Beta estimate on p1 equals canonical and marginal.
func TestBinaryEqualsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	probs, labels := randomSet(rng, 200, 2, 3)
	for _, h := range []float64{0.01, 0.1} {
		var vals []float64
		for _, notion := range []Notion{Binary, Canonical, ClassWise} {
			res, err := Estimate(context.Background(), notion, probs, labels, 2, nil, Options{Bandwidth: h, P: []float64{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			vals = append(vals, res.Values[0].Value, res.Values[1].Value)
		}
		for i := 2; i < len(vals); i++ {
			if relDiff(vals[i], vals[i%2]) > 1e-11 {
				t.Errorf("h=%v: binary/canonical/marginal values %v differ", h, vals)
			}
		}
	}
}

// TestDeterminism checks that results are bit-identical for any number of
// workers.
func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	probs, labels := randomSet(rng, 300, 4, 2)
	var ref []float64
	for _, w := range []int{1, 2, 3, 8} {
		var got []float64
		for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
			res, err := Estimate(context.Background(), notion, probs, labels, 4, nil, Options{Bandwidth: 0.02, P: []float64{1, 2}, Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res.Values[0].Value, res.Values[1].Value)
			_, g, err := Gradient(context.Background(), nil, notion, probs, labels, 4, 2, nil, Options{Bandwidth: 0.02, Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, g...)
			cv, err := SelectBandwidth(context.Background(), notion, probs, labels, 4, nil, BandwidthOptions{Workers: w})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, cv.Bandwidth, cv.LogLik)
			got = append(got, cv.GridLL...)
		}
		if ref == nil {
			ref = got
		} else if !slices.Equal(ref, got) {
			t.Errorf("workers=%d: results differ from workers=1", w)
		}
	}
}

// TestGradientFiniteDifferences compares Gradient and LogitGradient with
// central finite differences on random interior inputs for every notion.
func TestGradientFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for _, k := range []int{2, 4} {
		const n = 25
		logits := make([]float64, n*k)
		for i := range logits {
			logits[i] = 1.5 * rng.NormFloat64()
		}
		labels := make([]int, n)
		for i := range labels {
			labels[i] = rng.IntN(k)
		}
		probs := make([]float64, n*k)
		for j := 0; j < n; j++ {
			data.Softmax(probs[j*k:(j+1)*k], logits[j*k:(j+1)*k])
		}
		for _, notion := range notionList {
			if notion == Binary && k != 2 {
				continue
			}
			for _, p := range []float64{1, 2, 2.5} {
				for _, h := range []float64{0.05, 0.4} {
					opts := Options{Bandwidth: h, ClassMean: notion == ClassWise && p == 2}
					val := func(x []float64) float64 {
						res, err := Estimate(context.Background(), notion, x, labels, k, nil, Options{Bandwidth: h, P: []float64{p}, ClassMean: opts.ClassMean})
						if err != nil {
							t.Fatal(err)
						}
						return res.Values[0].Value
					}
					v, g, err := Gradient(context.Background(), nil, notion, probs, labels, k, p, nil, opts)
					if err != nil {
						t.Fatal(err)
					}
					if relDiff(v, val(probs)) > 1e-14 {
						t.Errorf("%s: Gradient value %v, Estimate %v", notion, v, val(probs))
					}
					fd := make([]float64, len(probs))
					x := slices.Clone(probs)
					for i := range x {
						if notion == Binary && i%2 == 0 {
							continue // column 0 is not read
						}
						step := 1e-6 * x[i]
						x[i] = probs[i] + step
						up := val(x)
						x[i] = probs[i] - step
						fd[i] = (up - val(x)) / (2 * step)
						x[i] = probs[i]
					}
					checkClose(t, notion.String()+" probabilities", g, fd, 2e-5)

					_, gz, err := LogitGradient(context.Background(), nil, notion, logits, labels, k, p, nil, opts)
					if err != nil {
						t.Fatal(err)
					}
					z := slices.Clone(logits)
					pz := make([]float64, len(z))
					valz := func() float64 {
						for j := 0; j < n; j++ {
							data.Softmax(pz[j*k:(j+1)*k], z[j*k:(j+1)*k])
						}
						return val(pz)
					}
					for i := range z {
						z[i] = logits[i] + 1e-6
						up := valz()
						z[i] = logits[i] - 1e-6
						fd[i] = (up - valz()) / 2e-6
						z[i] = logits[i]
					}
					checkClose(t, notion.String()+" logits", gz, fd, 2e-5)
				}
			}
		}
	}
	// Binary logits: one column, p1 = sigmoid(z).
	z := make([]float64, 30)
	labels := make([]int, 30)
	for i := range z {
		z[i] = 2 * rng.NormFloat64()
		labels[i] = rng.IntN(2)
	}
	val := func(z []float64) float64 {
		s, err := data.New(z, 1, labels, true, data.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Estimate(context.Background(), Binary, s.Probs, labels, 2, nil, Options{Bandwidth: 0.1, P: []float64{2}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Values[0].Value
	}
	_, g, err := LogitGradient(context.Background(), nil, Binary, z, labels, 1, 2, nil, Options{Bandwidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	fd := make([]float64, len(z))
	x := slices.Clone(z)
	for i := range x {
		x[i] = z[i] + 1e-6
		up := val(x)
		x[i] = z[i] - 1e-6
		fd[i] = (up - val(x)) / 2e-6
		x[i] = z[i]
	}
	checkClose(t, "binary logits", g, fd, 2e-5)
}

// checkClose requires max |got - want| <= tol * max |want|.
func checkClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	maxAbs, maxDiff := 0.0, 0.0
	for i := range want {
		maxAbs = math.Max(maxAbs, math.Abs(want[i]))
		maxDiff = math.Max(maxDiff, math.Abs(got[i]-want[i]))
	}
	if !(maxDiff <= tol*maxAbs) || maxAbs == 0 {
		t.Errorf("%s: max |analytic - finite difference| = %.3g x max |grad| (%.3g), want <= %g", name, maxDiff/maxAbs, maxAbs, tol)
	}
}

// TestLOOBruteForce checks the LOO objective at every grid point against a
// direct evaluation of l(h) = sum_j log((1/(n-1)) sum_{i!=j} k_h(f_j; f_i)),
// and that the refined bandwidth is at least as good as its neighbours.
func TestLOOBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 8))
	probs, labels := randomSet(rng, 120, 3, 1.5)
	cv, err := SelectBandwidth(context.Background(), Canonical, probs, labels, 3, nil, BandwidthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loo := func(h float64) float64 {
		sum := 0.0
		for j := 0; j < 120; j++ {
			m, s := math.Inf(-1), 0.0
			lk := make([]float64, 120)
			for i := range lk {
				if i != j {
					lk[i] = bruteLogDirichlet(probs[j*3:j*3+3], probs[i*3:i*3+3], h)
					m = math.Max(m, lk[i])
				}
			}
			for i := range lk {
				if i != j {
					s += math.Exp(lk[i] - m)
				}
			}
			sum += m + math.Log(s/119)
		}
		return sum
	}
	for i, h := range cv.Grid {
		if want := loo(h); relDiff(cv.GridLL[i], want) > 1e-11 {
			t.Errorf("loglik(%v) = %v, brute force %v", h, cv.GridLL[i], want)
		}
	}
	if !cv.Refined || cv.LogLik < cv.GridLL[cv.Index] {
		t.Errorf("refinement: h=%v ll=%v refined=%v, grid best %v", cv.Bandwidth, cv.LogLik, cv.Refined, cv.GridLL[cv.Index])
	}
	if relDiff(loo(cv.Bandwidth), cv.LogLik) > 1e-11 {
		t.Errorf("refined loglik %v, brute force %v", cv.LogLik, loo(cv.Bandwidth))
	}
	for _, f := range []float64{0.99, 1.01} {
		if ll := loo(cv.Bandwidth * f); ll > cv.LogLik+1e-9*math.Abs(cv.LogLik) {
			t.Errorf("loglik(%v * %v) = %v > loglik at the choice %v", cv.Bandwidth, f, ll, cv.LogLik)
		}
	}
}

// TestKnownCalibrationError checks consistency against a closed form: with
// p1 ~ U(0,1) and P(y=1 | p1) = p1^2, the binary CE_1 of the vector
// (1-p1, p1) is 2 E|p1^2 - p1| = 2 * 1/6 = 1/3, and CE_2^2 is
// 2 E (p1^2 - p1)^2 = 2/30.
func TestKnownCalibrationError(t *testing.T) {
	if testing.Short() {
		t.Skip("n = 4000")
	}
	rng := rand.New(rand.NewPCG(42, 1))
	const n = 4000
	probs, labels := make([]float64, 2*n), make([]int, n)
	for j := 0; j < n; j++ {
		p := rng.Float64()
		probs[2*j], probs[2*j+1] = 1-p, p
		if rng.Float64() < p*p {
			labels[j] = 1
		}
	}
	cv, err := SelectBandwidth(context.Background(), Binary, probs, labels, 2, nil, BandwidthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Estimate(context.Background(), Binary, probs, labels, 2, nil, Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Values[0].Value; math.Abs(got-1.0/3) > 0.02 {
		t.Errorf("CE_1 = %v at h = %v, want 1/3 +- 0.02", got, cv.Bandwidth)
	}
	if got := res.Values[1].Value; math.Abs(got-2.0/30) > 0.01 {
		t.Errorf("CE_2^2 = %v at h = %v, want 2/30 +- 0.01", got, cv.Bandwidth)
	}
}

// TestProgress checks that the progress callback ends at its total for
// Estimate, Gradient and SelectBandwidth.
func TestProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	probs, labels := randomSet(rng, 300, 3, 2)
	for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
		var last, total atomic.Int64
		fn := func(done, tot int64) {
			for {
				old := last.Load()
				if done <= old || last.CompareAndSwap(old, done) {
					break
				}
			}
			total.Store(tot)
		}
		check := func(what string) {
			t.Helper()
			if last.Load() == 0 || last.Load() != total.Load() {
				t.Errorf("%s %s: progress ended at %d of %d", notion, what, last.Load(), total.Load())
			}
			last.Store(0)
		}
		if _, err := Estimate(context.Background(), notion, probs, labels, 3, nil, Options{Bandwidth: 0.1, Progress: fn}); err != nil {
			t.Fatal(err)
		}
		check("Estimate")
		if _, _, err := Gradient(context.Background(), nil, notion, probs, labels, 3, 1, nil, Options{Bandwidth: 0.1, Progress: fn}); err != nil {
			t.Fatal(err)
		}
		check("Gradient")
		if _, err := SelectBandwidth(context.Background(), notion, probs, labels, 3, nil, BandwidthOptions{Progress: fn}); err != nil {
			t.Fatal(err)
		}
		check("SelectBandwidth")
	}
}

// TestBruteForceManyTiles checks the sweeps over several tiles of centres,
// where whole tiles are skipped on their bound, against the brute-force
// oracle: sharp predictions (most cross-class kernels negligible), small and
// moderate bandwidths, estimates and LOO sums.
func TestBruteForceManyTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	const n, k = 1100, 4
	probs, labels := randomSet(rng, n, k, 6)
	for _, h := range []float64{0.002, 0.05} {
		for _, notion := range []Notion{Canonical, TopLabel} {
			res, err := Estimate(context.Background(), notion, probs, labels, k, nil, Options{Bandwidth: h, P: []float64{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range []float64{1, 2} {
				want, _ := bruteEstimate(notion, probs, labels, k, h, p, false)
				if d := relDiff(res.Values[i].Value, want); d > 1e-10 {
					t.Errorf("%s h=%v p=%v: %.17g, brute force %.17g (rel %.2g)", notion, h, p, res.Values[i].Value, want, d)
				}
			}
		}
	}
	hs := []float64{0.001, 0.01, 0.3}
	cv, err := SelectBandwidth(context.Background(), Canonical, probs, labels, k, nil, BandwidthOptions{Grid: hs, NoRefine: true})
	if err != nil {
		t.Fatal(err)
	}
	for g, h := range hs {
		sum := 0.0
		for j := 0; j < n; j++ {
			m, s := math.Inf(-1), 0.0
			lk := make([]float64, n)
			for i := range lk {
				if i != j {
					lk[i] = bruteLogDirichlet(probs[j*k:(j+1)*k], probs[i*k:(i+1)*k], h)
					m = math.Max(m, lk[i])
				}
			}
			for i := range lk {
				if i != j {
					s += math.Exp(lk[i] - m)
				}
			}
			sum += m + math.Log(s/float64(n-1))
		}
		if d := relDiff(cv.GridLL[g], sum); d > 1e-12 {
			t.Errorf("LOO at h=%v: %.17g, brute force %.17g (rel %.2g)", h, cv.GridLL[g], sum, d)
		}
	}
}
