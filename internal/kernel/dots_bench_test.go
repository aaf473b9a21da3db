package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// BenchmarkDots compares the dot products of LogKernelRows (the
// register-blocked micro-kernel on AVX-512, row by row elsewhere) with a
// straightforward gonum Dgemm of the same tile, C = A B with A the na×d log
// coordinates and B the d×nb centre coordinates (by coordinate, as the
// sweeps store a tile), on the shapes the sweeps use: 8 evaluation points
// (a block) against one tile (204 centres at K = 10, 64 at K = 100, 16 at K
// = 1,000), and a large 256×256 panel. ns/pair is per (point, centre)
// product of d terms.
func BenchmarkDots(b *testing.B) {
	shapes := []struct{ na, nb, d int }{{8, 204, 10}, {8, 64, 100}, {8, 16, 1000}, {256, 256, 100}}
	for _, sh := range shapes {
		rng := rand.New(rand.NewPCG(uint64(sh.d), 1))
		ls, fct := make([]float64, sh.na*sh.d), make([]float64, sh.d*sh.nb)
		for i := range ls {
			ls[i] = math.Log(rng.Float64())
		}
		for i := range fct {
			fct[i] = rng.Float64()
		}
		zero, dst := make([]float64, sh.nb), make([]float64, sh.na*sh.nb)
		name := fmt.Sprintf("na=%d/nb=%d/d=%d", sh.na, sh.nb, sh.d)
		pairs := float64(sh.na * sh.nb)
		b.Run("LogKernelRows/"+name, func(b *testing.B) {
			for b.Loop() {
				LogKernelRows(dst, ls, sh.d, fct, sh.nb, zero, 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair")
		})
		b.Run("Dgemm/"+name, func(b *testing.B) {
			A := blas64.General{Rows: sh.na, Cols: sh.d, Stride: sh.d, Data: ls}
			B := blas64.General{Rows: sh.d, Cols: sh.nb, Stride: sh.nb, Data: fct}
			C := blas64.General{Rows: sh.na, Cols: sh.nb, Stride: sh.nb, Data: dst}
			for b.Loop() {
				blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, A, B, 0, C)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair")
		})
	}
}
