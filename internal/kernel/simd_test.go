package kernel

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// implementationsBesideGeneric runs f for every vector implementation this
// CPU has, with the generic one for reference.
func forEachVector(t *testing.T, f func(t *testing.T, im *implementation)) {
	for _, im := range implementations {
		if im == &generic {
			continue
		}
		t.Run(im.name, func(t *testing.T) { f(t, im) })
	}
}

// sameBits reports whether a and b have the same bits (NaN payloads
// included).
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// testInputs returns rows of log-kernel-like values: spread over the exp's
// range, with runs below the group cut, -Inf, values below ExpMin, and
// every length from 0 to 70 and some longer.
func testInputs(rng *rand.Rand) [][]float64 {
	var out [][]float64
	lengths := []int{}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 255, 256, 257, 1000)
	for _, n := range lengths {
		for rep := 0; rep < 4; rep++ {
			x := make([]float64, n)
			if rep == 3 {
				// Runs of 1 to 40 terms all below the cut (the groups
				// the vector loops skip whole) between runs above it.
				for i := 0; i < n; {
					m := min(n, i+1+rng.IntN(40))
					below := rng.IntN(2) == 0
					for ; i < m; i++ {
						x[i] = -rng.ExpFloat64() * 20
						if below {
							x[i] = -60 - rng.Float64()*100
							if rng.IntN(10) == 0 {
								x[i] = math.Inf(-1)
							}
						}
						x[i] += 1.5
					}
				}
				out = append(out, x)
				continue
			}
			for i := range x {
				switch r := rng.IntN(20); {
				case r == 0:
					x[i] = math.Inf(-1)
				case r == 1:
					x[i] = -800 - rng.Float64()*1e3 // below ExpMin after the shift
				case r < 8 && rep > 0:
					x[i] = -60 - rng.Float64()*100 // below the group cut
				case r == 9:
					x[i] = ExpMin + 1 - rng.Float64()*2 // around the flush
				default:
					x[i] = -rng.ExpFloat64() * 20
				}
				x[i] += 1.5 // the shift
			}
			out = append(out, x)
		}
	}
	return out
}

// TestVectorSumsBitIdentical: every vector implementation returns the
// generic implementation's bits for SumExp, SumExpSq, the exponential
// terms and their lane sums, AffineMax and Max, on every length.
func TestVectorSumsBitIdentical(t *testing.T) {
	forEachVector(t, func(t *testing.T, im *implementation) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, x := range testInputs(rng) {
			const shift = 1.5
			cut := shift + Negligible
			if g, v := generic.sumExp(x, shift, cut), im.sumExp(x, shift, cut); !sameBits(g, v) {
				t.Fatalf("n=%d: sumExp %v, generic %v", len(x), v, g)
			}
			gs, gq := generic.sumExpSq(x, shift, cut)
			vs, vq := im.sumExpSq(x, shift, cut)
			if !sameBits(gs, vs) || !sameBits(gq, vq) {
				t.Fatalf("n=%d: sumExpSq %v %v, generic %v %v", len(x), vs, vq, gs, gq)
			}
			var gl, vl [lanes]float64
			gl[3], vl[3] = 0.25, 0.25
			gd, vd := make([]float64, len(x)), make([]float64, len(x)+1)
			vd[len(x)] = 42
			generic.expTerms(gd, x, shift, cut, &gl)
			im.expTerms(vd[:len(x)], x, shift, cut, &vl)
			if gl != vl || vd[len(x)] != 42 {
				t.Fatalf("n=%d: expTerms lanes %v, generic %v (guard %v)", len(x), vl, gl, vd[len(x)])
			}
			for i := range gd {
				if !sameBits(gd[i], vd[i]) {
					t.Fatalf("n=%d: expTerms[%d] = %v, generic %v", len(x), i, vd[i], gd[i])
				}
			}
			c := make([]float64, len(x))
			for i := range c {
				c[i] = rng.NormFloat64()
			}
			ga, va := make([]float64, len(x)), make([]float64, len(x)+1)
			va[len(x)] = 42
			gm := generic.affineMax(ga, x, c, 0.7)
			vm := im.affineMax(va[:len(x)], x, c, 0.7)
			if !sameBits(gm, vm) || va[len(x)] != 42 {
				t.Fatalf("n=%d: affineMax %v, generic %v", len(x), vm, gm)
			}
			for i := range ga {
				if !sameBits(ga[i], va[i]) {
					t.Fatalf("n=%d: affineMax dst[%d] = %v, generic %v", len(x), i, va[i], ga[i])
				}
			}
			if g, v := generic.max(x), im.max(x); !sameBits(g, v) {
				t.Fatalf("n=%d: max %v, generic %v", len(x), v, g)
			}
		}
	})
}

// TestVectorRowsBitIdentical: LogKernelRow and the weighted row sums of
// every vector implementation give the generic bits for every number of
// centres and coordinates.
func TestVectorRowsBitIdentical(t *testing.T) {
	forEachVector(t, func(t *testing.T, im *implementation) {
		rng := rand.New(rand.NewPCG(9, 10))
		for _, d := range []int{1, 2, 3, 10, 17, 100} {
			for nb := 0; nb <= 80; nb++ {
				stride := nb + rng.IntN(3)
				fct := make([]float64, d*stride)
				for i := range fct {
					fct[i] = rng.Float64() / float64(d)
					if rng.IntN(10) == 0 {
						fct[i] = 0
					}
				}
				l := make([]float64, d)
				for m := range l {
					l[m] = math.Log(rng.Float64())
				}
				c := make([]float64, nb)
				for b := range c {
					c[b] = rng.NormFloat64() * 10
				}
				g, v := make([]float64, nb), make([]float64, nb+1)
				v[nb] = 42
				generic.logKernelRow(g, l, fct, stride, c, 3.3)
				im.logKernelRow(v[:nb], l, fct, stride, c, 3.3)
				for b := range g {
					if !sameBits(g[b], v[b]) {
						t.Fatalf("d=%d nb=%d: row[%d] = %v, generic %v", d, nb, b, v[b], g[b])
					}
				}
				if v[nb] != 42 {
					t.Fatalf("d=%d nb=%d: wrote past the row", d, nb)
				}
			}
		}
		for _, k := range []int{1, 2, 7, 8, 9, 10, 16, 17, 31, 32, 33, 40, 64, 65, 100} {
			for _, n := range []int{0, 1, 5, 9, 40} {
				w := make([]float64, n)
				for i := range w {
					if rng.IntN(4) > 0 {
						w[i] = rng.Float64()
					}
				}
				vv := make([]float64, n*k)
				for i := range vv {
					vv[i] = rng.NormFloat64()
				}
				g, v := make([]float64, k), make([]float64, k+1)
				for l := range g {
					g[l] = rng.NormFloat64()
					v[l] = g[l]
				}
				v[k] = 42
				generic.axpyRows(g, w, vv)
				im.axpyRows(v[:k], w, vv)
				for l := range g {
					if !sameBits(g[l], v[l]) {
						t.Fatalf("k=%d n=%d: acc[%d] = %v, generic %v", k, n, l, v[l], g[l])
					}
				}
				if v[k] != 42 {
					t.Fatalf("k=%d n=%d: wrote past acc", k, n)
				}
			}
		}
	})
}

// TestPaths: the generic path is always there and last, Use switches and
// restores, and an unknown name is refused with the available ones.
func TestPaths(t *testing.T) {
	paths := Paths()
	t.Logf("kernel paths on this CPU: %v; in use: %s (%s=%q)", paths, Path(), EnvVar, os.Getenv(EnvVar))
	if paths[len(paths)-1] != "generic" {
		t.Fatalf("Paths() = %v: generic is not last", paths)
	}
	before := Path()
	restore, err := Use("generic")
	if err != nil || Path() != "generic" {
		t.Fatalf("Use(generic): %v, path %s", err, Path())
	}
	restore()
	if Path() != before {
		t.Errorf("after restore: %s, want %s", Path(), before)
	}
	if _, err := Use("neon"); err == nil || !strings.Contains(err.Error(), "generic") {
		t.Errorf("Use(neon): %v, want an error listing the paths", err)
	}
	if got := pick("GENERIC").name; got != "generic" {
		t.Errorf("pick(GENERIC) = %s", got)
	}
	if got := pick("").name; got != paths[0] {
		t.Errorf("pick(\"\") = %s, want %s", got, paths[0])
	}
}

// TestLogKernelRowsBitIdentical: LogKernelRows gives every row LogKernelRow's
// bits (generic), on every path, for several numbers of points, centres and
// coordinates, and writes nothing past its rows.
func TestLogKernelRowsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, name := range Paths() {
		restore, err := Use(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{1, 2, 3, 10, 100} {
			for _, na := range []int{1, 3, 4, 5, 8, 9} {
				for _, nb := range []int{1, 7, 8, 15, 16, 17, 20, 33, 64, 204} {
					stride := nb + rng.IntN(3)
					fct := make([]float64, d*stride)
					for i := range fct {
						fct[i] = rng.Float64()
					}
					ls := make([]float64, na*d)
					for i := range ls {
						ls[i] = math.Log(rng.Float64())
					}
					c := make([]float64, nb)
					for b := range c {
						c[b] = rng.NormFloat64()
					}
					got := make([]float64, na*nb+1)
					got[na*nb] = 42
					LogKernelRows(got[:na*nb], ls, d, fct, stride, c, 2.5)
					want := make([]float64, nb)
					for a := 0; a < na; a++ {
						generic.logKernelRow(want, ls[a*d:(a+1)*d], fct, stride, c, 2.5)
						for b := range want {
							if !sameBits(got[a*nb+b], want[b]) {
								t.Fatalf("%s d=%d na=%d nb=%d: [%d][%d] = %v, want %v", name, d, na, nb, a, b, got[a*nb+b], want[b])
							}
						}
					}
					if got[na*nb] != 42 {
						t.Fatalf("%s d=%d na=%d nb=%d: wrote past the rows", name, d, na, nb)
					}
				}
			}
		}
		restore()
	}
}

// TestWeightedSumExp4: on every path, the four sums of WeightedSumExp4 have
// the bits of four WeightedSumExp (the generic path's), for vectors of 4 to
// 100 entries, rows across several term chunks, terms below the cut (zero
// weights, all four at once on some rows), signed and subnormal residuals,
// and it writes nothing past the accumulators.
func TestWeightedSumExp4(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 29))
	for _, path := range Paths() {
		restore, err := Use(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{4, 8, 12, 16, 100} {
			for _, n := range []int{1, 7, 256, 300, 777} {
				var x [4][]float64
				var shift [4]float64
				for g := range x {
					x[g] = make([]float64, n)
					for i := range x[g] {
						x[g][i] = -40 * rng.Float64()
						if rng.IntN(5) == 0 || i%11 == 3 {
							x[g][i] = -60 - rng.Float64() // below the cut
						}
					}
					shift[g] = 0.5 * rng.Float64()
				}
				v := make([]float64, n*k)
				for i := range v {
					v[i] = rng.NormFloat64()
					if rng.IntN(50) == 0 {
						v[i] = -0x1p-1060 * rng.Float64()
					}
				}
				var acc, want [4][]float64
				var ws [4]float64
				for g := range acc {
					acc[g] = make([]float64, k+1)
					acc[g][k] = 42
					want[g] = make([]float64, k)
					for l := range want[g] {
						want[g][l] = rng.NormFloat64()
						acc[g][l] = want[g][l]
					}
					r, _ := Use("generic")
					ws[g] = WeightedSumExp(want[g], x[g], v, shift[g])
					r()
				}
				var a [4][]float64
				for g := range a {
					a[g] = acc[g][:k]
				}
				got := WeightedSumExp4(&a, &x, v, &shift)
				for g := range acc {
					if !sameBits(got[g], ws[g]) {
						t.Fatalf("%s k=%d n=%d: sum %d = %v, want %v", path, k, n, g, got[g], ws[g])
					}
					for l := range want[g] {
						if !sameBits(acc[g][l], want[g][l]) {
							t.Fatalf("%s k=%d n=%d: acc[%d][%d] = %v, want %v", path, k, n, g, l, acc[g][l], want[g][l])
						}
					}
					if acc[g][k] != 42 {
						t.Fatalf("%s k=%d n=%d: wrote past acc %d", path, k, n, g)
					}
				}
			}
		}
		restore()
	}
}
