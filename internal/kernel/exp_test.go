package kernel

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// ulpDiff returns |a-b| in units of the last place of b.
func ulpDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / (math.Nextafter(b, math.Inf(1)) - b)
}

// TestExpAccuracy compares Exp with math.Exp (the oracle) on a dense sweep
// and random points of [ExpMin, 0]: at most 2 ulp apart.
func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst, at := 0.0, 0.0
	check := func(x float64) {
		if d := ulpDiff(Exp(x), math.Exp(x)); d > worst {
			worst, at = d, x
		}
	}
	for i := 0; i <= 1_000_000; i++ {
		check(ExpMin * float64(i) / 1_000_000)
	}
	for i := 0; i < 1_000_000; i++ {
		check(-rng.Float64() * 5)
		check(-rng.ExpFloat64() * 50)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), -1e-300, -5e-324, -1e-17, -math.Ln2, -1, ExpMin, -700, -706.9} {
		check(x)
	}
	if worst > 2 {
		t.Errorf("Exp: worst error %.2f ulp at x = %v, want <= 2", worst, at)
	}
	// Every implementation's vector exponential gives Exp's bits on the
	// sweep (the flush to 0 included: the sweep runs past ExpMin).
	sweep := make([]float64, 2_000_001)
	for i := range sweep {
		sweep[i] = (ExpMin - 5) * float64(i) / float64(len(sweep)-1)
	}
	got := make([]float64, len(sweep))
	for _, im := range implementations {
		var lane [lanes]float64
		im.expTerms(got, sweep, 0, math.Inf(-1), &lane)
		for i, x := range sweep {
			if !sameBits(got[i], Exp(x)) {
				t.Fatalf("%s: e^%v = %v, Exp gives %v", im.name, x, got[i], Exp(x))
			}
		}
	}
	t.Logf("worst error %.6f ulp at %v", worst, at)
}

func TestExpSpecial(t *testing.T) {
	for _, x := range []float64{math.Inf(-1), -1e308, -708, ExpMin - 1e-9} {
		if got := Exp(x); got != 0 {
			t.Errorf("Exp(%v) = %v, want 0", x, got)
		}
	}
	if got := Exp(0); got != 1 {
		t.Errorf("Exp(0) = %v, want 1", got)
	}
}

// TestSumExp checks SumExp against a plain sum of math.Exp.
func TestSumExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 7, 100, 1001} {
		x := make([]float64, n)
		want := 0.0
		for i := range x {
			x[i] = -rng.ExpFloat64() * 30
			if i%17 == 5 {
				x[i] = math.Inf(-1)
			}
			want += math.Exp(x[i] - 1)
		}
		got := SumExp(x, 1)
		if math.Abs(got-want) > 1e-14*want {
			t.Errorf("n=%d: SumExp = %v, want %v", n, got, want)
		}
	}
}

// TestWeightedSums checks WeightedSumExp and PairWeightedSumExp against
// direct sums (the pair sums over i != i' by a double loop), across two
// calls so that the pair sums also cover terms of an earlier call.
func TestWeightedSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, k = 300, 4
	x, v := make([]float64, n), make([]float64, n*k)
	for i := range x {
		x[i] = -rng.ExpFloat64() * 10
		if i%23 == 7 {
			x[i] = math.Inf(-1)
		}
		if i%31 == 3 {
			x[i] = -60 // below Negligible after the shift: skipped
		}
		for l := 0; l < k; l++ {
			v[i*k+l] = rng.NormFloat64()
		}
	}
	const shift = 0.5
	w := make([]float64, n)
	wantS, wantP, wantN := 0.0, 0.0, 0.0
	wantAcc := make([]float64, k)
	for i := range x {
		if x[i]-shift >= Negligible {
			w[i] = math.Exp(x[i] - shift)
		}
		wantS += w[i]
		for l := 0; l < k; l++ {
			wantAcc[l] += w[i] * v[i*k+l]
		}
	}
	for i := range x {
		for j := range x {
			if i != j {
				d := 0.0
				for l := 0; l < k; l++ {
					d += v[i*k+l] * v[j*k+l]
				}
				wantP += w[i] * w[j]
				wantN += w[i] * w[j] * d
			}
		}
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	acc := make([]float64, k)
	s := WeightedSumExp(acc, x[:100], v[:100*k], shift)
	s += WeightedSumExp(acc, x[100:], v[100*k:], shift)
	near("WeightedSumExp sum", s, wantS)
	for l := range acc {
		near("WeightedSumExp acc", acc[l], wantAcc[l])
	}
	acc = make([]float64, k)
	s, pp, np := PairWeightedSumExp(acc, x[:100], v[:100*k], shift, 0, 0, 0)
	s, pp, np = PairWeightedSumExp(acc, x[100:], v[100*k:], shift, s, pp, np)
	near("PairWeightedSumExp sum", s, wantS)
	near("PairWeightedSumExp pairs", pp, wantP)
	near("PairWeightedSumExp cross", np, wantN)
	for l := range acc {
		near("PairWeightedSumExp acc", acc[l], wantAcc[l])
	}
}

func BenchmarkSumExp(b *testing.B) {
	x := make([]float64, 4096)
	for i := range x {
		x[i] = -float64(i%50) * 0.37
	}
	for b.Loop() {
		SumExp(x, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/exp")
}

func BenchmarkMathExp(b *testing.B) {
	x := make([]float64, 4096)
	for i := range x {
		x[i] = -float64(i%50) * 0.37
	}
	for b.Loop() {
		s := 0.0
		for _, v := range x {
			s += math.Exp(v)
		}
		_ = s
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/exp")
}

// TestSumExpSq: the sums and the sums of squares of SumExpSq equal SumExp
// at shift and at twice the shift on doubled inputs (1e-14 relative), with
// negligible groups skipped in both.
func TestSumExpSq(t *testing.T) {
	x := make([]float64, 1000)
	for i := range x {
		x[i] = -30 + 0.037*float64(i) - 800*float64(i%97/96)
	}
	s, sq := SumExpSq(x, 2)
	x2 := make([]float64, len(x))
	for i, v := range x {
		x2[i] = 2 * v
	}
	want, want2 := SumExp(x, 2), SumExp(x2, 4)
	if math.Abs(s-want) > 1e-14*want || math.Abs(sq-want2) > 1e-13*want2 {
		t.Errorf("SumExpSq = %v, %v; SumExp %v, %v", s, sq, want, want2)
	}
}

// bigExp returns e^x to 200 bits (Taylor series of e^(x/2^s), squared s times).
func bigExp(x float64) *big.Float {
	const prec = 200
	s := 0
	for math.Abs(x)/math.Pow(2, float64(s)) > 0.01 {
		s++
	}
	y := new(big.Float).SetPrec(prec).SetFloat64(x / math.Pow(2, float64(s)))
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := 1; k < 40; k++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
		sum.Add(sum, term)
	}
	for ; s > 0; s-- {
		sum.Mul(sum, sum)
	}
	return sum
}

// TestExpTrueError bounds Exp's error against e^x computed to 200 bits
// (math/big): below 1.5 ulp, on random points of [ExpMin, 0] and the
// worst points of the math.Exp comparison.
func TestExpTrueError(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	worst, at := 0.0, 0.0
	xs := []float64{-0.321685, -1.079589, -1e-10, ExpMin, -700.5, -0.5, -1}
	for i := 0; i < 20000; i++ {
		xs = append(xs, -rng.Float64()*5, ExpMin*rng.Float64())
	}
	for _, x := range xs {
		want := bigExp(x)
		w, _ := want.Float64()
		ulp := math.Nextafter(w, math.Inf(1)) - w
		d, _ := new(big.Float).Sub(new(big.Float).SetFloat64(Exp(x)), want).Float64()
		if e := math.Abs(d) / ulp; e > worst {
			worst, at = e, x
		}
	}
	t.Logf("worst %.4f ulp at %v", worst, at)
	if worst >= 1.5 {
		t.Errorf("Exp: worst error %.4f ulp at %v against a 200-bit e^x, want < 1.5", worst, at)
	}
}

// TestExpScalar checks that Exp performs expInto's operations: the same bits
// on random arguments over the whole range, the ends and the specials.
func TestExpScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	xs := []float64{0, math.Copysign(0, -1), -1e-300, ExpMin, math.Nextafter(ExpMin, 0), math.Nextafter(ExpMin, -1000),
		-708, -745, -1e6, math.Inf(-1), math.NaN(), 1e-3, 0.5, 1}
	for range 100000 {
		xs = append(xs, -720*rng.Float64(), -rng.ExpFloat64())
	}
	want := make([]float64, len(xs))
	expInto(want, xs, 0)
	for i, x := range xs {
		if got := Exp(x); math.Float64bits(got) != math.Float64bits(want[i]) {
			t.Fatalf("Exp(%v) = %v, expInto gives %v", x, got, want[i])
		}
	}
}
