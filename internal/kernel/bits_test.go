package kernel

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
)

// kernelBitsWant is the FNV-1a hash of the bits kernelBits computes,
// recorded on amd64 (every path: avx512, avx2, generic). The pure-Go
// loops must give the same bits on every architecture (no product that is
// added may be fused into a multiply-add): CI runs this test for arm64
// under qemu-aarch64-static.
const kernelBitsWant = 0xa33fb1bf78583e3a

// kernelBitsBy runs the exported loops on fixed pseudo-random inputs (odd
// lengths, values across the exponential's range, zero weights) and hashes
// the bits of every result, and of each loop's.
func kernelBitsBy() (uint64, map[string]uint64) {
	rng := rand.New(rand.NewPCG(29, 3))
	h := fnv.New64a()
	by := map[string]uint64{}
	name := ""
	put := func(vs ...float64) {
		hh := fnv.New64a()
		defer func() { by[name] ^= hh.Sum64() * 0x9e3779b97f4a7c15 }()
		var b [8]byte
		for _, v := range vs {
			u := math.Float64bits(v)
			for i := range b {
				b[i] = byte(u >> (8 * i))
			}
			h.Write(b[:])
			hh.Write(b[:])
		}
	}
	for _, n := range []int{1, 7, 16, 33, 100, 257} {
		x := make([]float64, n)
		for i := range x {
			x[i] = -60 * rng.Float64() * rng.Float64()
		}
		name = "Exp,Max"
		put(Exp(x[0]), Max(x))
		name = "SumExp"
		put(SumExp(x, -1))
		name = "SumExpSq"
		put(SumExpSq(x, 0.5))
		dst := make([]float64, n)
		name = "ExpSum"
		put(ExpSum(dst, x, -2))
		put(dst...)
		for _, d := range []int{2, 3, 10} {
			v := make([]float64, n*d)
			for i := range v {
				v[i] = rng.Float64()
				if i%11 == 5 {
					v[i] = 0
				}
			}
			acc := make([]float64, d)
			name = "WeightedSumExp"
			put(WeightedSumExp(acc, x, v, -1))
			put(acc...)
			clear(acc)
			name = "PairWeightedSumExp"
			a, b, c := PairWeightedSumExp(acc, x, v, -1, 0.3, 0.7, 0.2)
			put(a, b, c)
			put(acc...)
			w := make([]float64, n)
			for i := range w {
				w[i] = rng.NormFloat64()
			}
			clear(acc)
			name = "AddWeightedRows"
			AddWeightedRows(acc, w, v)
			put(acc...)
			// Log-kernels of na rows against the n centres.
			na := 3
			lx := make([]float64, na*d)
			for i := range lx {
				lx[i] = -rng.ExpFloat64() // not math.Log: its amd64 assembly and the pure Go of arm64 may differ by an ulp
			}
			c0 := make([]float64, n)
			for i := range c0 {
				c0[i] = rng.NormFloat64()
			}
			fct := make([]float64, n*d) // coordinate m of centre b at fct[m*n + b]
			for m := 0; m < d; m++ {
				for b := 0; b < n; b++ {
					fct[m*n+b] = v[b*d+m]
				}
			}
			rows := make([]float64, na*n)
			name = "LogKernelRows"
			LogKernelRows(rows, lx, d, fct, n, c0, 7.5)
			put(rows...)
			name = "LogKernelTile"
			LogKernelTile(rows, lx, v, c0, d, 7.5)
			put(rows...)
			name = "AffineMax"
			put(AffineMax(dst, x, c0, 0.25))
			put(dst...)
		}
	}
	return h.Sum64(), by
}

// TestKernelBits: every path gives the recorded bits (see kernelBitsWant).
func TestKernelBits(t *testing.T) {
	for _, name := range Paths() {
		restore, err := Use(name)
		if err != nil {
			t.Fatal(err)
		}
		got, by := kernelBitsBy()
		restore()
		if got != kernelBitsWant {
			t.Errorf("%s path: bits hash %#x, recorded on amd64 %#x; per loop %x", name, got, uint64(kernelBitsWant), by)
		}
	}
}
