package kde

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/testenv"
)

// lineTol is the relative error allowed to the line form's kernel sums
// against the exact sweeps (line.go states about 1e-13), plus lineRound
// times the largest normaliser |log B(alpha_i)| (times the power): the
// log-kernels, differences of terms that large (about 1e6 at h = 1e-5),
// are rounded differently by the two (the order of the operations), by a
// few ulp of those terms.
const (
	lineTol   = 1e-11
	lineRound = 1e-14
)

// lineCase is a Beta problem's scores, 0/1 labels and weights.
type lineCase struct {
	name string
	c    []float64
	y    []int
	w    []float64
}

// lineCases returns continuous, rounded (ties, exact 0 and 1), constant,
// two-valued and one-sided scores of several sizes, with and without
// weights (zeros included).
func lineCases() []lineCase {
	rng := rand.New(rand.NewPCG(29, 1))
	var cs []lineCase
	add := func(name string, c []float64) {
		y := make([]int, len(c))
		for j, v := range c {
			if rng.Float64() < 0.8*v+0.1 {
				y[j] = 1
			}
		}
		cs = append(cs, lineCase{name: name, c: c, y: y})
		w := make([]float64, len(c))
		for j := range w {
			w[j] = rng.ExpFloat64()
			if j%7 == 3 {
				w[j] = 0
			}
		}
		if len(c) > 8 {
			cs = append(cs, lineCase{name: name + "/weighted", c: c, y: y, w: w})
		}
	}
	for _, n := range []int{2, 3, 17, 64, 300, 1500} {
		c := make([]float64, n)
		for j := range c {
			c[j] = 1 / (1 + math.Exp(-3*rng.NormFloat64()))
		}
		add(fmt.Sprintf("logistic/n=%d", n), c)
		r := make([]float64, n)
		for j := range r {
			r[j] = math.Round(c[j]*20) / 20 // ties, exact 0 and 1
		}
		add(fmt.Sprintf("rounded/n=%d", n), r)
	}
	// Sharp scores: most within 1e-6 of 0 (a class column of a sharp
	// network), some at exactly 0 and 1.
	c := make([]float64, 2000)
	for j := range c {
		switch {
		case j%50 == 0:
			c[j] = 0
		case j%61 == 0:
			c[j] = 1
		case j%5 == 0:
			c[j] = rng.Float64()
		default:
			c[j] = 1e-6 * rng.ExpFloat64() * rng.ExpFloat64()
		}
	}
	add("sharp", c)
	one := make([]float64, 500)
	for j := range one {
		one[j] = 0.3 // every score in one bin
	}
	add("constant", one)
	two := make([]float64, 500)
	for j := range two {
		two[j] = float64(j % 2) // only 0 and 1
	}
	add("zero-one", two)
	return cs
}

// checkLineSums compares the line form of a Beta problem with its exact
// sweeps: the LOO log-sums on grid and the power sums at the bandwidths hs,
// every label sum to lineTol of the point's total.
func checkLineSums(t *testing.T, name string, c []float64, y []int, w []float64, grid, hs []float64, powers int) {
	t.Helper()
	ex, fa := betaProblem(c, y, w, 2), betaProblem(c, y, w, 3)
	fa.fast = true
	n := len(c)
	// mag is the largest finite |log B(alpha_i)| at h.
	mag := func(h float64) float64 {
		m := 0.0
		for _, v := range ex.logNorm(h) {
			if !math.IsInf(v, 0) {
				m = max(m, math.Abs(v))
			}
		}
		return m
	}
	mags := make([]float64, len(grid))
	for g, h := range grid {
		mags[g] = mag(h)
	}
	le, lf := ex.looLSE(grid), fa.looLSE(grid)
	for i := range le {
		if (le[i] == math.Inf(-1)) != (lf[i] == math.Inf(-1)) || math.Abs(le[i]-lf[i]) > lineTol+lineRound*mags[i/n] {
			t.Fatalf("%s: h = %g, point %d: LOO log-sum %v, exact %v", name, grid[i/n], i%n, lf[i], le[i])
		}
	}
	for _, h := range hs {
		mh := mag(h)
		me, se := ex.sums(h, powers)
		mf, sf := fa.sums(h, powers)
		for j := range n {
			if (me[j] == math.Inf(-1)) != (mf[j] == math.Inf(-1)) {
				t.Fatalf("%s: h = %g, point %d: shift %v, exact %v", name, h, j, mf[j], me[j])
			}
			if me[j] == math.Inf(-1) {
				continue
			}
			for q := range powers {
				sc := math.Exp(float64(q+1) * (mf[j] - me[j])) // the fast sums in the exact units
				tot := se[q][2*j] + se[q][2*j+1]
				for l := range 2 {
					if d := math.Abs(sf[q][2*j+l]*sc - se[q][2*j+l]); !(d <= (lineTol+lineRound*float64(q+1)*mh)*tot) {
						t.Fatalf("%s: h = %g, point %d, power %d, label %d: %v, exact %v (total %v)", name, h, j, q+1, l, sf[q][2*j+l]*sc, se[q][2*j+l], tot)
					}
				}
			}
		}
	}
}

// TestLineMatchesExact checks the line form (line.go) against the exact
// sweeps on adversarial inputs: ties, scores at exactly 0 and 1, every score
// equal, only 0 and 1, sharp scores within 1e-6 of 0, weights with zeros,
// n from 2; every bandwidth of the default grid for the LOO sums and the
// first three power sums at four bandwidths.
func TestLineMatchesExact(t *testing.T) {
	hs := []float64{1e-5, 3e-3, 0.1, 1}
	for _, tc := range lineCases() {
		checkLineSums(t, tc.name, tc.c, tc.y, tc.w, DefaultGrid(), hs, 3)
	}
}

// TestLineRejectsShortSeries checks that the comparison above can fail: a
// series cut after 12 terms instead of lineTerms (error up to 1/12! = 2e-9
// of a node at |s| = 1) is caught.
func TestLineRejectsShortSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 9))
	c, y := make([]float64, 400), make([]int, 400)
	for j := range c {
		c[j] = rng.Float64()
		y[j] = rng.IntN(2)
	}
	p := betaProblem(c, y, nil, 1)
	p.fast = true
	ex := betaProblem(c, y, nil, 1)
	ln := p.lineOf()
	h := 0.05
	cn := p.logNorm(h)
	e := ln.trees[1].expand(cn, h, 1, 1)
	for k := range e.mu {
		if k%lineTerms >= 12 {
			e.mu[k] = 0
		}
	}
	me, se := ex.sums(h, 1)
	worst := 0.0
	for j := range c {
		var acc lineAcc
		acc.reset()
		for l := range 2 {
			ee := e
			if l == 0 {
				ee = ln.trees[0].expand(cn, h, 1, 1)
			}
			pt := ln.point(j, l, h)
			ln.trees[l].query(ee, &pt, l, &acc, nil, make([]float64, lineLeaf))
		}
		acc.finish()
		got := (acc.s[0] + acc.s[1]) * math.Exp(acc.scale-me[j])
		worst = max(worst, math.Abs(got-(se[0][2*j]+se[0][2*j+1]))/(se[0][2*j]+se[0][2*j+1]))
	}
	if worst <= lineTol {
		t.Fatalf("perturbed moments: worst relative error %g is within the tolerance %g", worst, lineTol)
	}
}

// TestLineRealSets compares the fast and exact estimates and LOO choices of
// the one-dimensional notions on real predictions: the demo's CIFAR-10
// test split (the first 2,000 rows; with CALIB_THOROUGH=1 all 10,000, the
// CIFAR-10 set of testdata/logits and the first 2,000 rows of its CIFAR-100
// set, whose exact marginal sweeps over 100 classes take minutes at
// 10,000). Values to a relative 1e-10, the
// grid log-likelihoods to 1e-9 absolute, the same bandwidth.
func TestLineRealSets(t *testing.T) {
	type set struct {
		name   string
		probs  []float64
		labels []int
		k      int
	}
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	n := 2000
	if testenv.Thorough() {
		n = len(s.Labels)
	}
	sets := []set{{"demo test", s.Probs[:n*s.K], s.Labels[:n], s.K}}
	if testenv.Thorough() {
		for _, name := range []string{"cifar10_densenet121-flsd53", "cifar100_resnet110-brier"} {
			d, err := data.Load("../testdata/logits/"+name+"/test_logits.npy", data.Options{Labels: "../testdata/logits/" + name + "/test_labels.npy", Logits: true})
			if err != nil {
				t.Fatal(err)
			}
			m := min(len(d.Labels), 20000/d.K*10)
			sets = append(sets, set{name, d.Probs[:m*d.K], d.Labels[:m], d.K})
		}
	}
	for _, st := range sets {
		for _, notion := range []Notion{TopLabel, ClassWise} {
			ce, err := SelectBandwidth(context.Background(), notion, st.probs, st.labels, st.k, nil, BandwidthOptions{Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			cf, err := SelectBandwidth(context.Background(), notion, st.probs, st.labels, st.k, nil, BandwidthOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range ce.GridLL {
				if d := math.Abs(ce.GridLL[i] - cf.GridLL[i]); !(d <= 1e-9*max(1, math.Abs(ce.GridLL[i]))) {
					t.Errorf("%s %s: grid %d: log-likelihood %v, exact %v", st.name, notion, i, cf.GridLL[i], ce.GridLL[i])
				}
			}
			if math.Abs(cf.Bandwidth-ce.Bandwidth) > 1e-6*ce.Bandwidth {
				t.Errorf("%s %s: bandwidth %v, exact %v", st.name, notion, cf.Bandwidth, ce.Bandwidth)
			}
			for _, h := range []float64{ce.Bandwidth, 0.02, 0.5} {
				ex, err := Estimate(context.Background(), notion, st.probs, st.labels, st.k, nil, Options{Bandwidth: h, P: []float64{1, 2}, Exact: true, Neighbours: true})
				if err != nil {
					t.Fatal(err)
				}
				fa, err := Estimate(context.Background(), notion, st.probs, st.labels, st.k, nil, Options{Bandwidth: h, P: []float64{1, 2}, Neighbours: true})
				if err != nil {
					t.Fatal(err)
				}
				for i := range ex.Values {
					if d := math.Abs(fa.Values[i].Value - ex.Values[i].Value); !(d <= 1e-10*ex.Values[i].Value) {
						t.Errorf("%s %s h = %g p = %g: %v, exact %v", st.name, notion, h, ex.Values[i].P, fa.Values[i].Value, ex.Values[i].Value)
					}
				}
				if math.Abs(fa.Neighbours-ex.Neighbours) > 1e-8*ex.Neighbours {
					t.Errorf("%s %s h = %g: neighbours %v, exact %v", st.name, notion, h, fa.Neighbours, ex.Neighbours)
				}
			}
		}
	}
}
