package kde

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// Sample weights: every weighted entry point against a brute-force double
// loop written from the formulas in doc.go (weights multiplied onto
// linear-scale kernels from bruteLogDirichlet and math.Exp, never as log
// weights like the package), unit weights against nil, zero weights against
// removed rows, determinism over worker counts, and the errors.

// randWeights draws n weights e^Z, Z ~ N(0, 1) (a spread of about e either
// way), with about a tenth exactly 0 when zeros is set (at least two stay
// positive).
func randWeights(rng *rand.Rand, n int, zeros bool) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Exp(rng.NormFloat64())
		if zeros && i >= 2 && rng.Float64() < 0.1 {
			w[i] = 0
		}
	}
	return w
}

// ones returns n unit weights.
func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

// maxRel tracks the largest relative difference seen by a test, for its log.
type maxRel float64

func (m *maxRel) add(got, want float64) float64 {
	d := relDiff(got, want)
	if d > float64(*m) {
		*m = maxRel(d)
	}
	return d
}

// bruteWeightedSums returns, for evaluation point j of the points x (n×d),
// the weighted kernel power sums over i != j of X_i = w_i k_h(x_j; x_i) in
// units of the largest kernel of positive weight: X[q] = sum X_i^(q+1), and
// by label XY[l][q] = sum_{y_i = l} X_i^(q+1); m is the number of other
// samples of positive weight and ok whether the sum of X_i is positive.
func bruteWeightedSums(x []float64, d int, y []int, nl int, w []float64, h float64, j int) (X [3]float64, XY [][3]float64, m int, ok bool) {
	n := len(y)
	lk := make([]float64, n)
	mx := math.Inf(-1)
	for i := 0; i < n; i++ {
		if i == j || w[i] == 0 {
			continue
		}
		m++
		lk[i] = bruteLogDirichlet(x[j*d:(j+1)*d], x[i*d:(i+1)*d], h)
		mx = math.Max(mx, lk[i])
	}
	XY = make([][3]float64, nl)
	if mx == math.Inf(-1) {
		return X, XY, m, false
	}
	for i := 0; i < n; i++ {
		if i == j || w[i] == 0 {
			continue
		}
		v := w[i] * math.Exp(lk[i]-mx)
		p := v
		for q := 0; q < 3; q++ {
			X[q] += p
			XY[y[i]][q] += p
			p *= v
		}
	}
	return X, XY, m, X[0] > 0
}

// bruteDebiased is appendix C's r_c written out from debias.go's comment:
// r - A/m + (C - B)/m^2 with plug-in moments of X and Y over m samples.
func bruteDebiased(X, XY [3]float64, m int) float64 {
	r := XY[0] / X[0]
	if m < 3 {
		return r
	}
	fm := float64(m)
	mu, nu := X[0]/fm, XY[0]/fm
	a2, a3, exy, exxy := X[1]/fm, X[2]/fm, XY[1]/fm, XY[2]/fm
	sxx := fm / (fm - 1) * (a2 - mu*mu)
	sxy := fm / (fm - 1) * (exy - mu*nu)
	kxxx := a3 - 3*mu*a2 + 2*mu*mu*mu
	kxxy := exxy - 2*mu*exy - nu*a2 + 2*mu*mu*nu
	A := nu*sxx/math.Pow(mu, 3) - sxy/(mu*mu)
	CB := 3*nu*sxx*sxx/math.Pow(mu, 5) - 3*sxx*sxy/math.Pow(mu, 4) - 2*nu*kxxx/math.Pow(mu, 4) + 2*kxxy/math.Pow(mu, 3)
	return r - A/fm + CB/(fm*fm)
}

// bruteWeightedRatios is the weighted leave-one-out regression of the
// labels, r_j = sum_{i != j} w_i k_ij e_{y_i} / sum_{i != j} w_i k_ij (or its
// debiased r_c), point by point.
func bruteWeightedRatios(x []float64, d int, y []int, nl int, w []float64, h float64, debias bool) (r [][]float64, ok []bool) {
	n := len(y)
	r, ok = make([][]float64, n), make([]bool, n)
	for j := 0; j < n; j++ {
		X, XY, m, okj := bruteWeightedSums(x, d, y, nl, w, h, j)
		r[j], ok[j] = make([]float64, nl), okj
		if !okj {
			continue
		}
		for l := range r[j] {
			if debias {
				r[j][l] = bruteDebiased(X, XY[l], m)
			} else {
				r[j][l] = XY[l][0] / X[0]
			}
		}
	}
	return r, ok
}

// bruteWeightedEstimate is doc.go's weighted ECE^KDE of a notion:
// sum_j w_j ||r_j - f_j||_p^p / sum_j w_j over the kept points, r_j the
// weighted leave-one-out ratio; ClassWise sums (or averages) the classes,
// Binary doubles the Beta estimate on p1.
func bruteWeightedEstimate(notion Notion, probs []float64, labels []int, k int, w []float64, h, p float64, classMean, debias bool) float64 {
	n := len(labels)
	lp := func(e float64) float64 { return math.Pow(math.Abs(e), p) }
	mean := func(term func(j int) float64, ok []bool) float64 {
		num, den := 0.0, 0.0
		for j := 0; j < n; j++ {
			if ok[j] {
				num += w[j] * term(j)
				den += w[j]
			}
		}
		return num / den
	}
	beta := func(c []float64, a []int) float64 {
		x := make([]float64, 0, 2*n)
		for _, v := range c {
			x = append(x, v, 1-v)
		}
		r, ok := bruteWeightedRatios(x, 2, a, 2, w, h, debias)
		return mean(func(j int) float64 { return lp(r[j][1] - c[j]) }, ok)
	}
	switch notion {
	case Canonical:
		r, ok := bruteWeightedRatios(probs, k, labels, k, w, h, debias)
		return mean(func(j int) float64 {
			s := 0.0
			for l := 0; l < k; l++ {
				s += lp(r[j][l] - probs[j*k+l])
			}
			return s
		}, ok)
	case ClassWise:
		v := 0.0
		for c := 0; c < k; c++ {
			col, a := make([]float64, n), make([]int, n)
			for j := range col {
				col[j] = probs[j*k+c]
				if labels[j] == c {
					a[j] = 1
				}
			}
			v += beta(col, a)
		}
		if classMean {
			v /= float64(k)
		}
		return v
	case TopLabel:
		c, a := confidences(probs, labels, k)
		return beta(c, a)
	case Binary:
		c := make([]float64, n)
		for j := range c {
			c[j] = probs[2*j+1]
		}
		return 2 * beta(c, labels)
	}
	panic("bad notion")
}

// TestWeightedBruteForce compares the weighted Estimate with the
// brute-force double loop for every notion, p = 1, 1.5, 2, several K, n and
// bandwidths, weights with and without zeros, plain and debiased (relative
// 1e-10, as TestBruteForce; measured max 3.7e-14).
func TestWeightedBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 6))
	ps := []float64{1, 1.5, 2}
	var worst maxRel
	for _, k := range []int{2, 3, 5} {
		for _, n := range []int{3, 40, 250} {
			probs, labels := randomSet(rng, n, k, 2)
			for _, zeros := range []bool{false, true} {
				w := randWeights(rng, n, zeros)
				for _, h := range []float64{0.005, 0.05, 0.7} {
					for _, notion := range notionList {
						if notion == Binary && k != 2 {
							continue
						}
						for _, o := range []Options{{ClassMean: notion == ClassWise}, {Debias: true}} {
							o.Bandwidth, o.P = h, ps
							res, err := Estimate(context.Background(), notion, probs, labels, k, w, o)
							if err != nil {
								if errors.Is(err, ErrNoDensity) && n == 3 {
									continue // three points, one weighted 0: possible
								}
								t.Fatalf("K=%d n=%d h=%v %s: %v", k, n, h, notion, err)
							}
							for i, p := range ps {
								want := bruteWeightedEstimate(notion, probs, labels, k, w, h, p, o.ClassMean, o.Debias)
								if d := worst.add(res.Values[i].Value, want); d > 1e-10 {
									t.Errorf("K=%d n=%d zeros=%v h=%v %s p=%v debias=%v: %.17g, brute force %.17g (rel %.2g)",
										k, n, zeros, h, notion, p, o.Debias, res.Values[i].Value, want, d)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", float64(worst))
}

// TestWeightedManyTiles is TestWeightedBruteForce over several tiles of
// centres (n = 1100 sharp predictions, whole tiles skipped on their bound)
// for Canonical and TopLabel (relative 1e-10).
func TestWeightedManyTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 16))
	const n, k = 1100, 4
	probs, labels := randomSet(rng, n, k, 6)
	w := randWeights(rng, n, true)
	var worst maxRel
	for _, h := range []float64{0.002, 0.05} {
		for _, notion := range []Notion{Canonical, TopLabel} {
			res, err := Estimate(context.Background(), notion, probs, labels, k, w, Options{Bandwidth: h, P: []float64{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range []float64{1, 2} {
				want := bruteWeightedEstimate(notion, probs, labels, k, w, h, p, false, false)
				if d := worst.add(res.Values[i].Value, want); d > 1e-10 {
					t.Errorf("%s h=%v p=%v: %.17g, brute force %.17g (rel %.2g)", notion, h, p, res.Values[i].Value, want, d)
				}
			}
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", float64(worst))
}

// bruteWeightedLOO is the weighted LOO objective of points x (n×d):
// (n+/W) sum_j w_j log( sum_{i != j} w_i k_h(x_j; x_i) / W_-j ) over the
// points with a positive density (n+ the number of positive weights), and
// with reference its float32 variant with log(W_-j h).
func bruteWeightedLOO(x []float64, d int, w []float64, h float64, reference bool) float64 {
	n := len(w)
	W, npos := 0.0, 0
	for _, v := range w {
		W += v
		if v > 0 {
			npos++
		}
	}
	sum := 0.0
	for j := 0; j < n; j++ {
		if w[j] == 0 {
			continue
		}
		lk := make([]float64, n)
		mx, others := math.Inf(-1), 0.0
		for i := 0; i < n; i++ {
			if i != j && w[i] > 0 {
				others += w[i]
				lk[i] = bruteLogDirichlet(x[j*d:(j+1)*d], x[i*d:(i+1)*d], h)
				mx = math.Max(mx, lk[i])
			}
		}
		if mx == math.Inf(-1) && !reference {
			continue
		}
		s := 0.0
		for i := 0; i < n; i++ {
			if i != j && w[i] > 0 {
				s += w[i] * math.Exp(lk[i]-mx)
			}
		}
		sub := math.Log(others)
		if reference {
			sub = float64(float32(math.Log(float64(float32(others * float64(float32(h)))))))
		}
		sum += w[j] * (mx + math.Log(s) - sub)
	}
	return float64(npos) / W * sum
}

// notionPoints returns the kernel points of each part of a notion (as
// parts does): the rows for Canonical, (c, 1-c) of each column for
// ClassWise, of the confidences for TopLabel, of p1 for Binary.
func notionPoints(notion Notion, probs []float64, labels []int, k int) (xs [][]float64, d int) {
	n := len(labels)
	two := func(c func(j int) float64) []float64 {
		x := make([]float64, 2*n)
		for j := 0; j < n; j++ {
			x[2*j], x[2*j+1] = c(j), 1-c(j)
		}
		return x
	}
	switch notion {
	case Canonical:
		return [][]float64{probs}, k
	case ClassWise:
		for c := 0; c < k; c++ {
			xs = append(xs, two(func(j int) float64 { return probs[j*k+c] }))
		}
		return xs, 2
	case TopLabel:
		c, _ := confidences(probs, labels, k)
		return [][]float64{two(func(j int) float64 { return c[j] })}, 2
	}
	return [][]float64{two(func(j int) float64 { return probs[2*j+1] })}, 2
}

// TestWeightedLOOBruteForce compares the weighted LOO and Reference
// objectives at every grid bandwidth (eight from 0.001 to 1) and at the
// refined bandwidth with the brute-force double loop, for every notion
// (relative 1e-11, as TestLOOBruteForce; measured max 1.7e-13).
func TestWeightedLOOBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 16))
	hs := []float64{0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 0.6, 1}
	var worst maxRel
	for _, k := range []int{2, 3} {
		probs, labels := randomSet(rng, 120, k, 1.5)
		w := randWeights(rng, 120, true)
		for _, notion := range notionList {
			if notion == Binary && k != 2 {
				continue
			}
			xs, d := notionPoints(notion, probs, labels, k)
			brute := func(h float64, ref bool) float64 {
				s := 0.0
				for _, x := range xs {
					s += bruteWeightedLOO(x, d, w, h, ref)
				}
				return s
			}
			for _, obj := range []Objective{LOO, Reference} {
				cv, err := SelectBandwidth(context.Background(), notion, probs, labels, k, w, BandwidthOptions{Grid: hs, Objective: obj, NoRefine: true})
				if err != nil && obj == Reference {
					continue // no reference log-likelihood above 0: the curve is still checked below
				}
				if err != nil {
					t.Fatal(err)
				}
				for g, h := range hs {
					if want := brute(h, obj == Reference); worst.add(cv.GridLL[g], want) > 1e-11 {
						t.Errorf("K=%d %s %s h=%v: %.17g, brute force %.17g", k, notion, obj, h, cv.GridLL[g], want)
					}
				}
			}
			cv, err := SelectBandwidth(context.Background(), notion, probs, labels, k, w, BandwidthOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := brute(cv.Bandwidth, false); worst.add(cv.LogLik, want) > 1e-11 {
				t.Errorf("K=%d %s: refined h=%v: %.17g, brute force %.17g", k, notion, cv.Bandwidth, cv.LogLik, want)
			}
			for _, f := range []float64{0.99, 1.01} {
				if ll := brute(cv.Bandwidth*f, false); ll > cv.LogLik+1e-9*math.Abs(cv.LogLik) {
					t.Errorf("K=%d %s: loglik(%v * %v) = %v > loglik at the choice %v", k, notion, cv.Bandwidth, f, ll, cv.LogLik)
				}
			}
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", float64(worst))
}

// TestWeightedNeighbours compares Result.Neighbours under weights with
// Kish's effective sample size (sum_i w_i k_ij)^2 / sum_i (w_i k_ij)^2 and
// the w_j-weighted median written out (relative 1e-9, as
// TestNeighboursBruteForce).
func TestWeightedNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 16))
	var worst maxRel
	for _, h := range []float64{0.005, 0.05, 0.3} {
		const n, k = 150, 3
		probs, labels := randomSet(rng, n, k, 1)
		w := randWeights(rng, n, true)
		res, err := Estimate(context.Background(), Canonical, probs, labels, k, w, Options{Bandwidth: h, Neighbours: true})
		if err != nil {
			t.Fatal(err)
		}
		type pair struct{ ess, w float64 }
		var ps []pair
		W := 0.0
		for j := 0; j < n; j++ {
			X, _, _, _ := bruteWeightedSums(probs, k, labels, k, w, h, j)
			ps = append(ps, pair{X[0] * X[0] / X[1], w[j]})
			W += w[j]
		}
		slices.SortFunc(ps, func(a, b pair) int {
			switch {
			case a.ess < b.ess:
				return -1
			case a.ess > b.ess:
				return 1
			}
			return 0
		})
		want, cum := 0.0, 0.0
		for _, p := range ps {
			if cum += p.w; cum > W/2 {
				want = p.ess
				break
			}
		}
		if d := worst.add(res.Neighbours, want); d > 1e-9 {
			t.Errorf("h=%v: Neighbours %v, brute force %v", h, res.Neighbours, want)
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", float64(worst))
}

// TestWeightedSharpness compares the weighted Sharpness (eq. 7 with
// w_i k_ij, plain and appendix D debiased with m the other samples of
// positive weight) with the brute-force double loop, and the weighted
// Variance's mean of y (relative 1e-10, as TestSharpnessBruteForce).
func TestWeightedSharpness(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 16))
	var worst maxRel
	for _, n := range []int{5, 60, 300} {
		probs, labels := randomSet(rng, n, 3, 1.5)
		w := randWeights(rng, n, true)
		c, a := confidences(probs, labels, 3)
		x := make([]float64, 0, 2*n)
		for _, v := range c {
			x = append(x, v, 1-v)
		}
		for _, h := range []float64{0.02, 0.3} {
			for _, debias := range []bool{false, true} {
				res, err := Sharpness(context.Background(), TopLabel, probs, labels, 3, w, Options{Bandwidth: h, Debias: debias})
				if err != nil {
					t.Fatal(err)
				}
				num, den, ybar, W := 0.0, 0.0, 0.0, 0.0
				for j := 0; j < n; j++ {
					ybar += w[j] * float64(a[j])
					W += w[j]
					X, XY, m, _ := bruteWeightedSums(x, 2, a, 2, w, h, j)
					d := X[0]*X[0] - X[1]
					if !(d > 0) {
						continue
					}
					v := (XY[1][0]*XY[1][0] - XY[1][1]) / d
					if debias && m >= 3 {
						fm := float64(m)
						mu, nu := X[0]/fm, XY[1][0]/fm
						sxx := fm / (fm - 1) * (X[1]/fm - mu*mu)
						sxy := fm / (fm - 1) * (XY[1][1]/fm - mu*nu)
						v -= 4 / fm * (nu*nu*sxx/math.Pow(mu, 4) - nu*sxy/math.Pow(mu, 3))
					}
					num += w[j] * v
					den += w[j]
				}
				want := num / den
				if d := worst.add(res.Value, want); d > 1e-10 {
					t.Errorf("n=%d h=%v debias=%v: %.17g, brute force %.17g", n, h, debias, res.Value, want)
				}
				ybar /= W
				if d := worst.add(res.Variance, want-ybar*ybar); d > 1e-10 {
					t.Errorf("n=%d h=%v: variance %.17g, brute force %.17g", n, h, res.Variance, want-ybar*ybar)
				}
			}
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", float64(worst))
}

// TestWeightedSquaredRatio compares SquaredRatio with weights with the pair
// sums sum_{i != i'} of w_i k_i y_i w_i' k_i' y_i' over those of w_i k_i
// w_i' k_i' (relative 1e-12), checks that a zero weight removes its centre
// and unit weights change nothing (bit for bit), and that invalid weights
// panic with an error wrapping mathx.ErrWeights.
func TestWeightedSquaredRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 16))
	const m = 30
	k, y := make([]float64, m), make([]float64, m)
	for i := range k {
		k[i] = math.Exp(rng.NormFloat64())
		if rng.Float64() < 0.4 {
			y[i] = 1
		}
	}
	w := randWeights(rng, m, true)
	num, den := 0.0, 0.0
	for i := range k {
		for i2 := range k {
			if i != i2 {
				a, b := w[i]*k[i], w[i2]*k[i2]
				num += a * y[i] * b * y[i2]
				den += a * b
			}
		}
	}
	got, deb := SquaredRatio(k, y, w)
	if d := relDiff(got, num/den); d > 1e-12 {
		t.Errorf("weighted ratio %.17g, pair sums %.17g (rel %.2g)", got, num/den, d)
	}
	var kk, yy []float64
	for i := range k {
		if w[i] > 0 {
			kk, yy = append(kk, w[i]*k[i]), append(yy, y[i])
		}
	}
	p0, d0 := SquaredRatio(kk, yy, nil)
	if relDiff(got, p0) > 1e-15 || relDiff(deb, d0) > 1e-15 {
		t.Errorf("zero weights: %v %v, removed: %v %v", got, deb, p0, d0)
	}
	p1, d1 := SquaredRatio(k, y, ones(m))
	p2, d2 := SquaredRatio(k, y, nil)
	if p1 != p2 || d1 != d2 {
		t.Errorf("unit weights %v %v, nil %v %v", p1, d1, p2, d2)
	}
	for _, bad := range [][]float64{{1, 2}, append(ones(m-1), -1), append(ones(m-1), math.NaN())} {
		func() {
			defer func() {
				e, _ := recover().(error)
				if !errors.Is(e, mathx.ErrWeights) {
					t.Errorf("weights %v: recovered %v, want a panic wrapping ErrWeights", bad[len(bad)-1], e)
				}
			}()
			SquaredRatio(k, y, bad)
		}()
	}
}

// bruteWeightedWitness returns, at bandwidth h, the weighted witness term,
// CV term and U-statistic term of every point (doc of witness.go):
// g_j = sum_{i != j} w_i k_ji e_i / sum w_i k_ji, U_j with pair weights
// w_i k_ji w_i' k_ji' from the difference of squares.
func bruteWeightedWitness(probs []float64, labels []int, k int, w []float64, h float64) (v1, cv, u []float64) {
	n := len(labels)
	e := residuals(probs, labels, k)
	v1, cv, u = make([]float64, n), make([]float64, n), make([]float64, n)
	for j := 0; j < n; j++ {
		// Kernels over i != j in units of the largest of positive weight.
		lk := make([]float64, n)
		mx := math.Inf(-1)
		for i := range lk {
			if i != j && w[i] > 0 {
				lk[i] = bruteLogDirichlet(probs[j*k:(j+1)*k], probs[i*k:(i+1)*k], h)
				mx = math.Max(mx, lk[i])
			}
		}
		sum, sum2, r2 := 0.0, 0.0, 0.0
		num := make([]float64, k)
		for i := range lk {
			if i == j || w[i] == 0 {
				continue
			}
			wi := w[i] * math.Exp(lk[i]-mx)
			sum += wi
			sum2 += wi * wi
			ee := 0.0
			for l := 0; l < k; l++ {
				num[l] += wi * e[i*k+l]
				ee += e[i*k+l] * e[i*k+l]
			}
			r2 += wi * wi * ee
		}
		ge, gg, nn := 0.0, 0.0, 0.0
		for l := 0; l < k; l++ {
			g := num[l] / sum
			switch {
			case g > 0:
				v1[j] += e[j*k+l]
			case g < 0:
				v1[j] -= e[j*k+l]
			}
			ge += g * e[j*k+l]
			gg += g * g
			nn += num[l] * num[l]
		}
		cv[j] = 2*ge - gg
		u[j] = 2*ge - (nn-r2)/(sum*sum-sum2)
	}
	return v1, cv, u
}

// wmean returns sum_j w_j x_j / sum_j w_j.
func wmean(x, w []float64) float64 {
	s, d := 0.0, 0.0
	for j, v := range x {
		s += w[j] * v
		d += w[j]
	}
	return s / d
}

// TestWeightedWitness compares the weighted Witness with the brute force:
// the curves V1(h) and CV(h) (weighted means of the direct terms, absolute
// 1e-12), the p = 2 estimate (the weighted mean of the direct U-statistic
// terms at P2Scale h_cv, absolute 1e-10, as TestWitnessBruteForce), and the
// cross-fitted p = 1 estimate recomputed from the direct terms, the same
// permutations and weighted half sums (absolute 1e-12).
func TestWeightedWitness(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 16))
	const n, k, splits, seed = 200, 3, 5, 3
	probs, labels := randomSet(rng, n, k, 1.5)
	w := randWeights(rng, n, true)
	grid := []float64{0.01, 0.03, 0.1, 0.3, 1}
	res, err := Witness(context.Background(), probs, labels, k, w, WitnessOptions{Grid: grid, Seed: seed, Splits: splits})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	check := func(what string, got, want, tol float64) {
		t.Helper()
		d := math.Abs(got - want)
		worst = math.Max(worst, d)
		if d > tol {
			t.Errorf("%s: %.17g, brute force %.17g", what, got, want)
		}
	}
	v1s := make([][]float64, len(grid))
	cvMeans := make([]float64, len(grid))
	for g, h := range grid {
		v1, cv, _ := bruteWeightedWitness(probs, labels, k, w, h)
		v1s[g] = v1
		cvMeans[g] = wmean(cv, w)
		check("V1 curve", res.Values[0].Curve[g], wmean(v1, w), 1e-12)
		check("CV curve", res.Values[1].Curve[g], cvMeans[g], 1e-12)
	}
	hcv := grid[mathx.Argmax(cvMeans)]
	_, _, u := bruteWeightedWitness(probs, labels, k, w, hcv/2)
	check("p = 2 estimate", res.Values[1].Value, wmean(u, w), 1e-10)

	// p = 1: every point is defined here, so split s permutes 0..n-1.
	terms := make([]float64, n)
	best := func(idx []int) int {
		bg, bs := 0, math.Inf(-1)
		for g := range grid {
			s := 0.0
			for _, j := range idx {
				s += w[j] * v1s[g][j]
			}
			if s > bs {
				bg, bs = g, s
			}
		}
		return bg
	}
	for s := 0; s < splits; s++ {
		perm := rand.New(rand.NewPCG(seed, uint64(s))).Perm(n)
		a, b := perm[:n/2], perm[n/2:]
		ga, gb := best(a), best(b)
		for _, j := range a {
			terms[j] += v1s[gb][j] / splits
		}
		for _, j := range b {
			terms[j] += v1s[ga][j] / splits
		}
	}
	check("p = 1 cross-fitted estimate", res.Values[0].Value, wmean(terms, w), 1e-12)
	for i := range res.Values {
		idx := []int{3, 3, 7, 0, 150, 199}
		var tw, ww []float64
		for _, j := range idx {
			tw, ww = append(tw, res.Values[i].Terms[j]), append(ww, w[j])
		}
		check("Resampled", res.Resampled(i, idx), wmean(tw, ww), 1e-15)
	}
	t.Logf("max absolute difference from the brute force: %.2g", worst)
}

// TestWeightedRegression compares the weighted Regression and
// ScoreRegression with the brute-force kernel sums over all samples:
// r(x) = sum_i w_i k_i e_{y_i} / sum_i w_i k_i (absolute 1e-12 x max(r,
// 1e-3), as TestRegressionBruteForce) and log((1/W) sum_i w_i k_i)
// (1e-10 x max(1, |log density|)).
func TestWeightedRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
	worst := 0.0
	for _, k := range []int{2, 3, 5} {
		for _, h := range []float64{0.01, 0.1, 0.5} {
			probs, labels := randomSet(rng, 200, k, 2)
			w := randWeights(rng, 200, true)
			q, _ := randomSet(rng, 30, k, 1.5)
			q = append(q, probs[:5*k]...)
			r, ld, _, err := Regression(context.Background(), q, probs, labels, k, w, Options{Bandwidth: h, Workers: 3})
			if err != nil {
				t.Fatal(err)
			}
			W := 0.0
			for _, v := range w {
				W += v
			}
			for j := 0; j < len(q)/k; j++ {
				lk := make([]float64, len(labels))
				mx := math.Inf(-1)
				for i := range labels {
					lk[i] = bruteLogDirichlet(q[j*k:(j+1)*k], probs[i*k:(i+1)*k], h)
					if w[i] > 0 {
						mx = math.Max(mx, lk[i])
					}
				}
				want := make([]float64, k)
				tot := 0.0
				for i, y := range labels {
					v := w[i] * math.Exp(lk[i]-mx)
					want[y] += v
					tot += v
				}
				for l := range want {
					want[l] /= tot
					d := math.Abs(r[j*k+l] - want[l])
					worst = math.Max(worst, d/math.Max(want[l], 1e-3))
					if d > 1e-12*math.Max(want[l], 1e-3) {
						t.Errorf("K %d h %v query %d class %d: %v, brute force %v", k, h, j, l, r[j*k+l], want[l])
					}
				}
				wd := mx + math.Log(tot/W)
				if math.Abs(ld[j]-wd) > 1e-10*math.Max(1, math.Abs(wd)) {
					t.Errorf("K %d h %v query %d: log density %v, brute force %v", k, h, j, ld[j], wd)
				}
			}
			if k != 2 {
				continue
			}
			// ScoreRegression is Regression on the points (1 - s, s).
			scores, two := make([]float64, 200), make([]float64, 400)
			for i := range scores {
				scores[i] = probs[2*i+1]
				two[2*i], two[2*i+1] = 1-scores[i], scores[i]
			}
			qs := []float64{0.1, 0.5, 0.93}
			rs, _, err := ScoreRegression(context.Background(), qs, scores, labels, w, Options{Bandwidth: h})
			if err != nil {
				t.Fatal(err)
			}
			for j, c := range qs {
				rr, _, _, _ := Regression(context.Background(), []float64{1 - c, c}, two, labels, 2, w, Options{Bandwidth: h})
				if rs[j] != rr[1] {
					t.Errorf("ScoreRegression(%v) = %v, Regression %v", c, rs[j], rr[1])
				}
			}
		}
	}
	t.Logf("max relative difference from the brute force: %.2g", worst)
}

// TestWeightedGradient checks the weighted Gradient: its value equals the
// weighted Estimate (relative 1e-14), it matches central finite
// differences of the weighted Estimate (2e-5 of the largest entry, as
// TestGradientFiniteDifferences), samples of weight 0 get exactly 0, and
// LogitGradient passes the weights through.
func TestWeightedGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 16))
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
			mathx.Softmax(probs[j*k:(j+1)*k], logits[j*k:(j+1)*k])
		}
		w := randWeights(rng, n, true)
		w[5] = 0
		for _, notion := range notionList {
			if notion == Binary && k != 2 {
				continue
			}
			for _, p := range []float64{1, 2} {
				const h = 0.1
				val := func(x []float64) float64 {
					res, err := Estimate(context.Background(), notion, x, labels, k, w, Options{Bandwidth: h, P: []float64{p}})
					if err != nil {
						t.Fatal(err)
					}
					return res.Values[0].Value
				}
				v, g, err := Gradient(context.Background(), nil, notion, probs, labels, k, p, w, Options{Bandwidth: h})
				if err != nil {
					t.Fatal(err)
				}
				if d := relDiff(v, val(probs)); d > 1e-14 {
					t.Errorf("%s p=%v: Gradient value %v, Estimate %v", notion, p, v, val(probs))
				}
				fd := make([]float64, len(probs))
				x := slices.Clone(probs)
				for i := range x {
					if notion == Binary && i%2 == 0 {
						continue
					}
					step := 1e-6 * x[i]
					x[i] = probs[i] + step
					up := val(x)
					x[i] = probs[i] - step
					fd[i] = (up - val(x)) / (2 * step)
					x[i] = probs[i]
				}
				checkClose(t, notion.String()+" weighted", g, fd, 2e-5)
				for j := 0; j < n; j++ {
					if w[j] == 0 && slices.ContainsFunc(g[j*k:(j+1)*k], func(v float64) bool { return v != 0 }) {
						t.Errorf("%s p=%v: sample %d of weight 0 has gradient %v", notion, p, j, g[j*k:(j+1)*k])
					}
				}
				lv, _, err := LogitGradient(context.Background(), nil, notion, logits, labels, k, p, w, Options{Bandwidth: h})
				if err != nil || relDiff(lv, v) > 1e-14 {
					t.Errorf("%s: LogitGradient value %v (%v), Gradient %v", notion, lv, err, v)
				}
			}
		}
	}
}

// TestUnitWeightsEqualNil checks that weights of exactly 1 give the
// unweighted results bit for bit in every entry point.
func TestUnitWeightsEqualNil(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 16))
	for _, k := range []int{2, 3} {
		const n = 180
		probs, labels := randomSet(rng, n, k, 2)
		one := ones(n)
		for _, notion := range notionList {
			if notion == Binary && k != 2 {
				continue
			}
			for _, o := range []Options{
				{Bandwidth: 0.03, P: []float64{1, 2, 2.5}, Terms: true, Neighbours: true, ClassMean: true},
				{Bandwidth: 0.2, P: []float64{1, 2}, Debias: true},
			} {
				a, err1 := Estimate(context.Background(), notion, probs, labels, k, nil, o)
				b, err2 := Estimate(context.Background(), notion, probs, labels, k, one, o)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !slices.Equal(a.Values, b.Values) || a.Neighbours != b.Neighbours || a.Excluded != b.Excluded {
					t.Errorf("%s %+v: Estimate %v, unit weights %v", notion, o, a.Values, b.Values)
				}
				if o.Terms {
					for i := range o.P {
						idx := []int{0, 5, 5, 17, n - 1}
						if a.Resampled(i, idx) != b.Resampled(i, idx) {
							t.Errorf("%s: Resampled differs", notion)
						}
					}
				}
			}
			for _, obj := range []Objective{LOO, Reference} {
				a, err1 := SelectBandwidth(context.Background(), notion, probs, labels, k, nil, BandwidthOptions{Objective: obj})
				b, err2 := SelectBandwidth(context.Background(), notion, probs, labels, k, one, BandwidthOptions{Objective: obj})
				if (err1 == nil) != (err2 == nil) {
					t.Fatal(err1, err2)
				}
				if err1 == nil && (a.Bandwidth != b.Bandwidth || a.LogLik != b.LogLik || !slices.Equal(a.GridLL, b.GridLL)) {
					t.Errorf("%s %s: SelectBandwidth %v %v, unit weights %v %v", notion, obj, a.Bandwidth, a.GridLL, b.Bandwidth, b.GridLL)
				}
			}
			_, ga, err1 := Gradient(context.Background(), nil, notion, probs, labels, k, 2, nil, Options{Bandwidth: 0.1, ClassMean: true})
			_, gb, err2 := Gradient(context.Background(), nil, notion, probs, labels, k, 2, one, Options{Bandwidth: 0.1, ClassMean: true})
			if err1 != nil || err2 != nil || !slices.Equal(ga, gb) {
				t.Errorf("%s: Gradient differs with unit weights (%v %v)", notion, err1, err2)
			}
			if notion == TopLabel || notion == Binary {
				for _, debias := range []bool{false, true} {
					a, err1 := Sharpness(context.Background(), notion, probs, labels, k, nil, Options{Bandwidth: 0.1, Debias: debias})
					b, err2 := Sharpness(context.Background(), notion, probs, labels, k, one, Options{Bandwidth: 0.1, Debias: debias})
					if err1 != nil || err2 != nil || a.Value != b.Value || a.Variance != b.Variance || !slices.Equal(a.Terms, b.Terms) {
						t.Errorf("%s: Sharpness %v, unit weights %v (%v %v)", notion, a, b, err1, err2)
					}
					if a.Resampled([]int{1, 1, 4}) != b.Resampled([]int{1, 1, 4}) {
						t.Errorf("%s: Sharpness Resampled differs", notion)
					}
				}
			}
		}
		a, err1 := Witness(context.Background(), probs, labels, k, nil, WitnessOptions{Seed: 2})
		b, err2 := Witness(context.Background(), probs, labels, k, one, WitnessOptions{Seed: 2})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i := range a.Values {
			x, y := a.Values[i], b.Values[i]
			if x.Value != y.Value || x.Bandwidth != y.Bandwidth || !slices.Equal(x.Terms, y.Terms) || !slices.Equal(x.Curve, y.Curve) {
				t.Errorf("Witness p = %v: %v, unit weights %v", x.P, x.Value, y.Value)
			}
			if a.Resampled(i, []int{2, 2, 9}) != b.Resampled(i, []int{2, 2, 9}) {
				t.Errorf("Witness Resampled differs")
			}
		}
		q, _ := randomSet(rng, 20, k, 1)
		ra, la, _, err1 := Regression(context.Background(), q, probs, labels, k, nil, Options{Bandwidth: 0.05})
		rb, lb, _, err2 := Regression(context.Background(), q, probs, labels, k, one, Options{Bandwidth: 0.05})
		if err1 != nil || err2 != nil || !slices.Equal(ra, rb) || !slices.Equal(la, lb) {
			t.Errorf("Regression differs with unit weights (%v %v)", err1, err2)
		}
	}
}

// TestZeroWeightsRemoveRows checks that a sample of weight 0 changes
// nothing, as if its row were removed (relative 1e-12: the sums of the two
// runs group their terms differently, so they agree to rounding, not bit
// for bit): Estimate (plain, debiased, PerClass, Neighbours), the LOO
// objective, Sharpness, Gradient (0 on the removed rows), Regression and
// Witness (its curves and the p = 2 estimate; the p = 1 half-splits are
// drawn over all points).
func TestZeroWeightsRemoveRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 16))
	const n, k = 160, 3
	probs, labels := randomSet(rng, n, k, 1.5)
	w := randWeights(rng, n, false)
	for _, j := range []int{0, 7, 8, 50, 51, 52, 120, n - 1} {
		w[j] = 0
	}
	var kp []int
	var rp []float64
	var rl []int
	var rw []float64
	for j := 0; j < n; j++ {
		if w[j] > 0 {
			kp = append(kp, j)
			rp, rl, rw = append(rp, probs[j*k:(j+1)*k]...), append(rl, labels[j]), append(rw, w[j])
		}
	}
	var worst maxRel
	check := func(what string, got, want float64) {
		t.Helper()
		if d := worst.add(got, want); d > 1e-12 {
			t.Errorf("%s: %.17g with zero weights, %.17g removed (rel %.2g)", what, got, want, d)
		}
	}
	for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
		for _, o := range []Options{{Bandwidth: 0.04, P: []float64{1, 2}, Neighbours: true}, {Bandwidth: 0.2, P: []float64{1, 2}, Debias: true}} {
			a, err1 := Estimate(context.Background(), notion, probs, labels, k, w, o)
			b, err2 := Estimate(context.Background(), notion, rp, rl, k, rw, o)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for i := range a.Values {
				check(notion.String()+" estimate", a.Values[i].Value, b.Values[i].Value)
				if notion == ClassWise {
					for c := range k {
						check("per class", a.PerClass[i][c], b.PerClass[i][c])
					}
				}
			}
			check("neighbours", a.Neighbours, b.Neighbours)
		}
		a, err1 := SelectBandwidth(context.Background(), notion, probs, labels, k, w, BandwidthOptions{})
		b, err2 := SelectBandwidth(context.Background(), notion, rp, rl, k, rw, BandwidthOptions{})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for g := range a.GridLL {
			check(notion.String()+" LOO", a.GridLL[g], b.GridLL[g])
		}
		// The refinement's parabolas divide differences of nearly equal
		// objective values, so the last-bit differences of the sums move
		// the chosen bandwidth by more than they move the sums (measured
		// 3e-11 relative); it is located to 1 % anyway.
		if d := relDiff(a.Bandwidth, b.Bandwidth); d > 1e-9 {
			t.Errorf("%s: selected bandwidth %.17g with zero weights, %.17g removed (rel %.2g)", notion, a.Bandwidth, b.Bandwidth, d)
		}
		_, ga, err1 := Gradient(context.Background(), nil, notion, probs, labels, k, 2, w, Options{Bandwidth: 0.1})
		_, gb, err2 := Gradient(context.Background(), nil, notion, rp, rl, k, 2, rw, Options{Bandwidth: 0.1})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		scale := 0.0
		for _, v := range gb {
			scale = math.Max(scale, math.Abs(v))
		}
		for j := 0; j < n; j++ {
			for m := 0; m < k; m++ {
				want := 0.0
				if r, ok := slices.BinarySearch(kp, j); ok {
					want = gb[r*k+m]
				} else if ga[j*k+m] != 0 {
					t.Errorf("%s: gradient of removed row %d is %v", notion, j, ga[j*k+m])
				}
				if d := math.Abs(ga[j*k+m] - want); d > 1e-12*scale {
					t.Errorf("%s: gradient [%d, %d] %v with zero weights, %v removed", notion, j, m, ga[j*k+m], want)
				}
			}
		}
	}
	for _, debias := range []bool{false, true} {
		a, err1 := Sharpness(context.Background(), TopLabel, probs, labels, k, w, Options{Bandwidth: 0.1, Debias: debias})
		b, err2 := Sharpness(context.Background(), TopLabel, rp, rl, k, rw, Options{Bandwidth: 0.1, Debias: debias})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		check("sharpness", a.Value, b.Value)
		check("sharpness variance", a.Variance, b.Variance)
	}
	q, _ := randomSet(rng, 20, k, 1)
	ra, la, _, err1 := Regression(context.Background(), q, probs, labels, k, w, Options{Bandwidth: 0.05})
	rb, lb, _, err2 := Regression(context.Background(), q, rp, rl, k, rw, Options{Bandwidth: 0.05})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range ra {
		check("regression", ra[i], rb[i])
	}
	for i := range la {
		check("log density", la[i], lb[i])
	}
	wa, err1 := Witness(context.Background(), probs, labels, k, w, WitnessOptions{Seed: 1})
	wb, err2 := Witness(context.Background(), rp, rl, k, rw, WitnessOptions{Seed: 1})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range wa.Values {
		for g := range wa.Values[i].Curve {
			check("witness curve", wa.Values[i].Curve[g], wb.Values[i].Curve[g])
		}
	}
	check("witness p = 2", wa.Values[1].Value, wb.Values[1].Value)
	t.Logf("max relative difference: %.2g", float64(worst))
}

// TestWeightedDeterminism checks bit-identical weighted results for 1, 2
// and 7 workers.
func TestWeightedDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 16))
	const n, k = 300, 4
	probs, labels := randomSet(rng, n, k, 2)
	w := randWeights(rng, n, true)
	q, _ := randomSet(rng, 40, k, 1)
	var ref []float64
	for _, workers := range []int{1, 2, 7} {
		var got []float64
		for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
			for _, o := range []Options{{Bandwidth: 0.02, P: []float64{1, 2}, Neighbours: true, Terms: true}, {Bandwidth: 0.2, P: []float64{2}, Debias: true}} {
				o.Workers = workers
				res, err := Estimate(context.Background(), notion, probs, labels, k, w, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range res.Values {
					got = append(got, v.Value)
				}
				got = append(got, res.Neighbours)
			}
			_, g, err := Gradient(context.Background(), nil, notion, probs, labels, k, 2, w, Options{Bandwidth: 0.02, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, g...)
			cv, err := SelectBandwidth(context.Background(), notion, probs, labels, k, w, BandwidthOptions{Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, cv.Bandwidth, cv.LogLik)
			got = append(got, cv.GridLL...)
		}
		s, err := Sharpness(context.Background(), TopLabel, probs, labels, k, w, Options{Bandwidth: 0.05, Workers: workers, Debias: true})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, s.Value)
		wr, err := Witness(context.Background(), probs, labels, k, w, WitnessOptions{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range wr.Values {
			got = append(got, v.Value, v.Bandwidth)
			got = append(got, v.Terms...)
		}
		r, ld, _, err := Regression(context.Background(), q, probs, labels, k, w, Options{Bandwidth: 0.05, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		got = append(append(got, r...), ld...)
		if ref == nil {
			ref = got
		} else if !slices.Equal(ref, got) {
			t.Errorf("workers=%d: weighted results differ from workers=1", workers)
		}
	}
}

// TestWeightedResampled checks the weighted bootstrap of the per-point
// terms: on every point once it is the estimate (relative 1e-15), and on a
// resample with repeats the weighted mean of the drawn points' terms, each
// carrying its weight.
func TestWeightedResampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 16))
	const n, k = 120, 3
	probs, labels := randomSet(rng, n, k, 2)
	w := randWeights(rng, n, true)
	all := make([]int, n)
	for j := range all {
		all[j] = j
	}
	idx := make([]int, n)
	for j := range idx {
		idx[j] = rng.IntN(n)
	}
	for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
		res, err := Estimate(context.Background(), notion, probs, labels, k, w, Options{Bandwidth: 0.05, P: []float64{1, 2}, Terms: true, ClassMean: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Values {
			if d := relDiff(res.Resampled(i, all), res.Values[i].Value); d > 1e-15 {
				t.Errorf("%s: Resampled on every point %v, estimate %v", notion, res.Resampled(i, all), res.Values[i].Value)
			}
			want := 0.0
			for c := range res.Terms[i] {
				num, den := 0.0, 0.0
				for _, j := range idx {
					if res.Kept[c][j] {
						num += w[j] * res.Terms[i][c][j]
						den += w[j]
					}
				}
				want += num / den
			}
			if notion == ClassWise {
				want /= k
			}
			if d := relDiff(res.Resampled(i, idx), want); d > 1e-14 {
				t.Errorf("%s: Resampled %v, weighted mean of the drawn terms %v", notion, res.Resampled(i, idx), want)
			}
		}
	}
	s, err := Sharpness(context.Background(), TopLabel, probs, labels, k, w, Options{Bandwidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if d := relDiff(s.Resampled(all), s.Value); d > 1e-15 {
		t.Errorf("Sharpness Resampled on every point %v, estimate %v", s.Resampled(all), s.Value)
	}
}

// TestWeightErrors checks that every entry point refuses invalid weights
// with an error wrapping mathx.ErrWeights (wrong length, negative, NaN,
// +Inf, all zero), and the leave-one-out ones a single positive weight
// with ErrTooFew.
func TestWeightErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 16))
	const n, k = 12, 2
	probs, labels := randomSet(rng, n, k, 1)
	scores := make([]float64, n)
	for i := range scores {
		scores[i] = probs[2*i+1]
	}
	o := Options{Bandwidth: 0.1}
	calls := map[string]func(w []float64) error{
		"Estimate": func(w []float64) error {
			_, err := Estimate(context.Background(), Canonical, probs, labels, k, w, o)
			return err
		},
		"SelectBandwidth": func(w []float64) error {
			_, err := SelectBandwidth(context.Background(), TopLabel, probs, labels, k, w, BandwidthOptions{})
			return err
		},
		"Gradient": func(w []float64) error {
			_, _, err := Gradient(context.Background(), nil, ClassWise, probs, labels, k, 1, w, o)
			return err
		},
		"LogitGradient": func(w []float64) error {
			_, _, err := LogitGradient(context.Background(), nil, Binary, scores, labels, 1, 1, w, o)
			return err
		},
		"Sharpness": func(w []float64) error {
			_, err := Sharpness(context.Background(), Binary, probs, labels, k, w, o)
			return err
		},
		"Witness": func(w []float64) error {
			_, err := Witness(context.Background(), probs, labels, k, w, WitnessOptions{})
			return err
		},
		"Regression": func(w []float64) error {
			_, _, _, err := Regression(context.Background(), probs, probs, labels, k, w, o)
			return err
		},
		"ScoreRegression": func(w []float64) error {
			_, _, err := ScoreRegression(context.Background(), scores, scores, labels, w, o)
			return err
		},
	}
	bad := map[string][]float64{
		"short":    ones(n - 1),
		"long":     ones(n + 1),
		"empty":    {},
		"negative": append(ones(n-1), -0.5),
		"NaN":      append(ones(n-1), math.NaN()),
		"Inf":      append(ones(n-1), math.Inf(1)),
		"zero":     make([]float64, n),
	}
	for name, call := range calls {
		for what, w := range bad {
			if err := call(w); !errors.Is(err, mathx.ErrWeights) {
				t.Errorf("%s with %s weights: %v, want an error wrapping ErrWeights", name, what, err)
			}
		}
		single := make([]float64, n)
		single[3] = 2
		err := call(single)
		switch name {
		case "Regression", "ScoreRegression":
			if err != nil {
				t.Errorf("%s with one positive weight: %v", name, err)
			}
		default:
			if !errors.Is(err, ErrTooFew) {
				t.Errorf("%s with one positive weight: %v, want an error wrapping ErrTooFew", name, err)
			}
		}
	}
}

// TestWeightScaleInvariance checks that multiplying every weight by 3.7
// changes no estimate beyond rounding (relative 1e-12): the ratios, the
// outer means, the LOO objective, the debiasing, the sharpness, the
// regression and its density, and the witness.
func TestWeightScaleInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 16))
	const n, k = 150, 3
	probs, labels := randomSet(rng, n, k, 1.5)
	w := randWeights(rng, n, true)
	w2 := make([]float64, n)
	for i, v := range w {
		w2[i] = 3.7 * v
	}
	var worst maxRel
	check := func(what string, a, b float64) {
		t.Helper()
		if d := worst.add(a, b); d > 1e-12 {
			t.Errorf("%s: %.17g, weights x 3.7: %.17g (rel %.2g)", what, a, b, d)
		}
	}
	for _, notion := range []Notion{Canonical, ClassWise, TopLabel} {
		for _, o := range []Options{{Bandwidth: 0.03, P: []float64{1, 2}, Neighbours: true}, {Bandwidth: 0.2, P: []float64{2}, Debias: true}} {
			a, err1 := Estimate(context.Background(), notion, probs, labels, k, w, o)
			b, err2 := Estimate(context.Background(), notion, probs, labels, k, w2, o)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for i := range a.Values {
				check(notion.String(), a.Values[i].Value, b.Values[i].Value)
			}
			check("neighbours", a.Neighbours, b.Neighbours)
		}
		a, err1 := SelectBandwidth(context.Background(), notion, probs, labels, k, w, BandwidthOptions{NoRefine: true})
		b, err2 := SelectBandwidth(context.Background(), notion, probs, labels, k, w2, BandwidthOptions{NoRefine: true})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for g := range a.GridLL {
			check(notion.String()+" LOO", a.GridLL[g], b.GridLL[g])
		}
	}
	sa, err1 := Sharpness(context.Background(), TopLabel, probs, labels, k, w, Options{Bandwidth: 0.1, Debias: true})
	sb, err2 := Sharpness(context.Background(), TopLabel, probs, labels, k, w2, Options{Bandwidth: 0.1, Debias: true})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	check("sharpness", sa.Value, sb.Value)
	q, _ := randomSet(rng, 10, k, 1)
	ra, la, _, err1 := Regression(context.Background(), q, probs, labels, k, w, Options{Bandwidth: 0.05})
	rb, lb, _, err2 := Regression(context.Background(), q, probs, labels, k, w2, Options{Bandwidth: 0.05})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range ra {
		check("regression", ra[i], rb[i])
	}
	for i := range la {
		check("log density", la[i], lb[i])
	}
	wa, err1 := Witness(context.Background(), probs, labels, k, w, WitnessOptions{})
	wb, err2 := Witness(context.Background(), probs, labels, k, w2, WitnessOptions{})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	for i := range wa.Values {
		check("witness", wa.Values[i].Value, wb.Values[i].Value)
	}
	t.Logf("max relative difference: %.2g", float64(worst))
}
