package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// pairTermsRef is pairTermsGeneric written as its documentation states it:
// the dot over all of acc in eight lanes, then the scalars, then the update
// of acc.
func pairTermsRef(acc, w, v []float64, s, pp, np float64) (float64, float64, float64) {
	k := len(acc)
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		vi := v[i*k : (i+1)*k]
		var lane [lanes]float64
		for l, a := range acc {
			lane[l&(lanes-1)] += float64(vi[l] * a)
		}
		d := reduceLanes(&lane)
		t := 2 * wi
		np += float64(t * d)
		pp += float64(t * s)
		s += wi
		for l := range acc {
			acc[l] += float64(wi * vi[l])
		}
	}
	return s, pp, np
}

// pairKs are the lengths of acc the pair-sum tests cover: every register
// path of the vector code and its masks, and the memory paths with every
// remainder mod 8.
var pairKs = func() []int {
	var ks []int
	for k := 0; k <= 41; k++ {
		ks = append(ks, k)
	}
	return append(ks, 47, 64, 100, 1000)
}()

// pairCase returns weights for n terms (about a quarter of them +0 or -0,
// some tiny, some large), their rows of k entries and a starting acc.
func pairCase(rng *rand.Rand, n, k int) (w, v, acc []float64) {
	w = make([]float64, n)
	for i := range w {
		switch r := rng.IntN(12); {
		case r < 2:
			w[i] = 0
		case r == 2:
			w[i] = math.Copysign(0, -1)
		case r == 3:
			w[i] = math.Exp(-45 * rng.Float64())
		case r == 4:
			w[i] = 1
		default:
			w[i] = rng.Float64()
		}
	}
	v = make([]float64, n*k)
	for i := range v {
		v[i] = rng.NormFloat64()
		if rng.IntN(50) == 0 {
			v[i] = 0
		}
	}
	acc = make([]float64, k)
	for l := range acc {
		acc[l] = rng.NormFloat64() * 3
	}
	return w, v, acc
}

// TestPairTermsBitIdentical: pairTermsGeneric gives the bits of its
// documented order of operations, and every vector implementation gives
// the generic bits (the returned sums and every entry of acc) for every
// length of acc and several numbers of terms, and writes nothing past acc
// or before it.
func TestPairTermsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, k := range pairKs {
		for _, n := range []int{0, 1, 2, 3, 8, 37, 256} {
			w, v, acc0 := pairCase(rng, n, k)
			s0, pp0, np0 := rng.Float64()*5, rng.Float64()*20, rng.NormFloat64()*20
			if rng.IntN(4) == 0 {
				s0, pp0, np0 = 0, 0, 0
			}
			ref := append([]float64(nil), acc0...)
			rs, rpp, rnp := pairTermsRef(ref, w, v, s0, pp0, np0)
			for _, im := range implementations {
				// acc between two guard elements.
				buf := make([]float64, k+2)
				buf[0], buf[k+1] = 42, -42
				acc := buf[1 : k+1 : k+1]
				copy(acc, acc0)
				gs, gpp, gnp := im.pairTerms(acc, w, v, s0, pp0, np0)
				where := fmt.Sprintf("%s k=%d n=%d", im.name, k, n)
				if !sameBits(gs, rs) || !sameBits(gpp, rpp) || !sameBits(gnp, rnp) {
					t.Fatalf("%s: s, pp, np = %v, %v, %v; want %v, %v, %v", where, gs, gpp, gnp, rs, rpp, rnp)
				}
				for l := range acc {
					if !sameBits(acc[l], ref[l]) {
						t.Fatalf("%s: acc[%d] = %v, want %v", where, l, acc[l], ref[l])
					}
				}
				if buf[0] != 42 || buf[k+1] != -42 {
					t.Fatalf("%s: wrote outside acc (guards %v, %v)", where, buf[0], buf[k+1])
				}
			}
		}
	}
}

// TestPairTermsSpecial: infinite and NaN weights and rows give the same
// bits on every path (NaN where the generic code has NaN), and the lanes
// that the masks leave out do not carry them into the dot products.
func TestPairTermsSpecial(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, k := range pairKs {
		for rep := 0; rep < 2; rep++ {
			w, v, acc0 := pairCase(rng, 9, k)
			w[2] = math.Inf(1)
			if rep == 1 {
				// Positive rows: acc becomes +Inf and the dot products
				// +Inf, not NaN, after the infinite weight.
				w[3], w[4] = 0.5, 0.25
				for i := range v {
					v[i] = math.Abs(v[i]) + 0.1
				}
			}
			specialCase(t, k, w[:5], v[:5*k], acc0)
		}
	}
}

// specialCase runs pairTermsRef and every implementation from acc0 and
// fails unless they all give the same bits.
func specialCase(t *testing.T, k int, w, v, acc0 []float64) {
	t.Helper()
	ref := append([]float64(nil), acc0...)
	rs, rpp, rnp := pairTermsRef(ref, w, v, 1, 2, 3)
	for _, im := range implementations {
		acc := append([]float64(nil), acc0...)
		gs, gpp, gnp := im.pairTerms(acc, w, v, 1, 2, 3)
		if !sameBits(gs, rs) || !sameBits(gpp, rpp) || !sameBits(gnp, rnp) {
			t.Fatalf("%s k=%d: s, pp, np = %v, %v, %v; want %v, %v, %v", im.name, k, gs, gpp, gnp, rs, rpp, rnp)
		}
		for l := range acc {
			if !sameBits(acc[l], ref[l]) {
				t.Fatalf("%s k=%d: acc[%d] = %v, want %v", im.name, k, l, acc[l], ref[l])
			}
		}
	}
}

// TestPairWeightedSumExpK100 checks PairWeightedSumExp against direct sums
// (the pair sums over i != i' by a double loop) at K = 100, over three
// calls of which one is longer than a chunk of terms, on every
// implementation, and that the implementations agree bit for bit.
func TestPairWeightedSumExpK100(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const n, k = 700, 100
	x, v := make([]float64, n), make([]float64, n*k)
	for i := range x {
		x[i] = -rng.ExpFloat64() * 8
		if i%29 == 3 {
			x[i] = math.Inf(-1)
		}
		if i%37 == 5 {
			x[i] = -70 // below the cut after the shift
		}
		for l := 0; l < k; l++ {
			v[i*k+l] = rng.NormFloat64()
		}
	}
	const shift = 0.25
	w := make([]float64, n)
	wantS, wantP, wantN := 0.0, 0.0, 0.0
	for i := range x {
		if x[i]-shift >= Negligible {
			w[i] = math.Exp(x[i] - shift)
		}
		wantS += w[i]
	}
	wantAcc := make([]float64, k)
	for i := range x {
		for l := 0; l < k; l++ {
			wantAcc[l] += w[i] * v[i*k+l]
		}
		for j := range x {
			if i != j && w[i] != 0 && w[j] != 0 {
				d := 0.0
				for l := 0; l < k; l++ {
					d += v[i*k+l] * v[j*k+l]
				}
				wantP += w[i] * w[j]
				wantN += w[i] * w[j] * d
			}
		}
	}
	near := func(name string, got, want, scale float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12*scale {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	var first []float64
	for _, im := range implementations {
		restore, err := Use(im.name)
		if err != nil {
			t.Fatal(err)
		}
		acc := make([]float64, k)
		s, pp, np := 0.0, 0.0, 0.0
		for _, cut := range [][2]int{{0, 100}, {100, 400}, {400, n}} {
			a, b := cut[0], cut[1]
			s, pp, np = PairWeightedSumExp(acc, x[a:b], v[a*k:b*k], shift, s, pp, np)
		}
		restore()
		near(im.name+" s", s, wantS, wantS)
		near(im.name+" pp", pp, wantP, wantP)
		near(im.name+" np", np, wantN, wantP*k)
		for l := range acc {
			near(fmt.Sprintf("%s acc[%d]", im.name, l), acc[l], wantAcc[l], wantS)
		}
		got := append([]float64{s, pp, np}, acc...)
		if first == nil {
			first = got
			continue
		}
		for j := range got {
			if !sameBits(got[j], first[j]) {
				t.Fatalf("%s: result %d = %v, %s gives %v", im.name, j, got[j], implementations[0].name, first[j])
			}
		}
	}
}

// BenchmarkPairTerms times the pair-sum loop on 256 terms (all of them
// kept) at K = 10 and 100 with every implementation, in ns per term.
func BenchmarkPairTerms(b *testing.B) {
	const n = 256
	for _, k := range []int{10, 100} {
		rng := rand.New(rand.NewPCG(19, 20))
		w := make([]float64, n)
		for i := range w {
			w[i] = 0.5 + rng.Float64()
		}
		v := make([]float64, n*k)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for _, im := range implementations {
			f := im.pairTerms
			b.Run(fmt.Sprintf("K=%d/%s", k, im.name), func(b *testing.B) {
				acc := make([]float64, k)
				s, pp, np := 0.0, 0.0, 0.0
				for b.Loop() {
					clear(acc)
					s, pp, np = f(acc, w, v, 0, 0, 0)
				}
				_, _, _ = s, pp, np
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/term")
			})
		}
	}
}

// BenchmarkPairTermsTile times the pair-sum loop on the tiles of the kde
// sweeps (16 KiB of rows, at most 256 terms: 204 terms at K = 10, 20 at
// K = 100), the same rows again and again as there, in ns per term.
func BenchmarkPairTermsTile(b *testing.B) {
	for _, k := range []int{10, 100} {
		n := min(256, (16<<10)/(8*k))
		rng := rand.New(rand.NewPCG(21, 22))
		w := make([]float64, n)
		for i := range w {
			w[i] = 0.5 + rng.Float64()
		}
		v := make([]float64, n*k)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for _, im := range implementations {
			f := im.pairTerms
			b.Run(fmt.Sprintf("K=%d/n=%d/%s", k, n, im.name), func(b *testing.B) {
				acc := make([]float64, k)
				for b.Loop() {
					clear(acc)
					f(acc, w, v, 0, 0, 0)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/term")
			})
		}
	}
}
