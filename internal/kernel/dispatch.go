package kernel

import (
	"fmt"
	"os"
	"strings"
)

// EnvVar names the environment variable that picks the implementation of
// the kernels when the process starts: "generic" forces the pure-Go loops,
// "avx2" or "avx512" ask for a SIMD path (the best one the CPU has at or
// below it is used), and "" or "auto" take the best the CPU has.
const EnvVar = "CALIB_KERNEL"

// An implementation is one set of the hot loops. Every implementation
// gives bit-identical results: the vector code performs the same float64
// operations as the generic code (fused multiply-adds where the generic
// code calls math.FMA and nowhere else, the same polynomial and table for
// the exponential) and the sums are split into
// the same eight lanes, element i into lane i mod 8, reduced in the same
// order (see reduceLanes).
type implementation struct {
	name string
	// sumExp returns the lane sum of Exp(x_i - shift) over the groups of
	// 16 not entirely below cut.
	sumExp func(x []float64, shift, cut float64) float64
	// sumExpSq is sumExp with the lane sum of the squares too.
	sumExpSq func(x []float64, shift, cut float64) (float64, float64)
	// expTerms sets dst[i] = Exp(x_i - shift) where x_i >= cut and 0
	// elsewhere, and adds dst[i] to lanes[i mod 8] (len(dst) = len(x), a
	// multiple of 8 except for the last call of a sum).
	expTerms func(dst, x []float64, shift, cut float64, lanes *[lanes]float64)
	// affineMax and max are AffineMax and Max.
	affineMax func(dst, x, c []float64, scale float64) float64
	max       func(x []float64) float64
	// logKernelRow is LogKernelRow (finite log coordinates).
	logKernelRow func(dst, l, fct []float64, stride int, c []float64, invh float64)
	// axpyRows adds w[i] * v[i*k : (i+1)*k] to acc (k = len(acc)) for every
	// i with w[i] != 0, in order of i.
	axpyRows func(acc, w, v []float64)
	// pairTerms is the pair-sum loop of PairWeightedSumExp (see
	// pairTermsGeneric).
	pairTerms func(acc, w, v []float64, s, pp, np float64) (float64, float64, float64)
}

// implementations lists the implementations this CPU can run, best first;
// the last is always generic.
var implementations = append(simdImplementations(), &generic)

// active is the implementation in use.
var active = pick(os.Getenv(EnvVar))

// pick returns the implementation named by an EnvVar value, or the best one
// at or below it that this CPU has.
func pick(name string) *implementation {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || name == "auto" {
		return implementations[0]
	}
	rank := map[string]int{"generic": 0, "avx2": 1, "avx512": 2}
	want, ok := rank[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "calib: %s=%q is not generic, avx2, avx512 or auto; using %s\n", EnvVar, name, implementations[0].name)
		return implementations[0]
	}
	for _, im := range implementations {
		if rank[im.name] <= want {
			return im
		}
	}
	return &generic
}

// Path returns the name of the implementation in use: "avx512", "avx2" or
// "generic".
func Path() string { return active.name }

// Paths returns the implementations this CPU can run, best first (the last
// is "generic").
func Paths() []string {
	names := make([]string, len(implementations))
	for i, im := range implementations {
		names[i] = im.name
	}
	return names
}

// Use switches to the named implementation (one of Paths) and returns a
// function that switches back. It is for tests and benchmarks: it must not
// run while kernels are in use.
func Use(name string) (restore func(), err error) {
	for _, im := range implementations {
		if im.name == name {
			prev := active
			active = im
			return func() { active = prev }, nil
		}
	}
	return nil, fmt.Errorf("kernel: implementation %q is not available on this CPU (have %s)", name, strings.Join(Paths(), ", "))
}
