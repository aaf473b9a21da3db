package mathx

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestSoftmaxSigmoid(t *testing.T) {
	p := make([]float64, 3)
	Softmax(p, []float64{1000, 1000, 1000 - math.Log(2)})
	for k, want := range []float64{0.4, 0.4, 0.2} {
		if math.Abs(p[k]-want) > 1e-13 { // 1000 - log 2 carries an error of ulp(1000) = 1.1e-13
			t.Errorf("softmax[%d] = %v, want %v", k, p[k], want)
		}
	}
	// The two-class softmax of (0, z) is the sigmoid of z.
	for _, z := range []float64{-800, -3, 0, 2.5, 800} {
		Softmax(p[:2], []float64{0, z})
		if s := Sigmoid(z); math.Abs(s-p[1]) > 1e-15 || math.IsNaN(s) {
			t.Errorf("sigmoid(%v) = %v, softmax %v", z, s, p[1])
		}
	}
}

func TestQuantileLogSpaceArgmax(t *testing.T) {
	x := []float64{1, 2, 4, 8}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {1, 8}, {0.5, 3}, {1.0 / 3, 2}, {0.9, 6.8}} {
		if got := Quantile(x, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v (NumPy linear)", c.q, got, c.want)
		}
	}
	g := LogSpace(1e-3, 1, 4)
	for i, want := range []float64{1e-3, 1e-2, 1e-1, 1} {
		if math.Abs(g[i]-want) > 1e-15*want*10 {
			t.Errorf("LogSpace[%d] = %v, want %v", i, g[i], want)
		}
	}
	if Argmax([]float64{1, 3, 3, 2}) != 1 || Argmax(nil) != -1 {
		t.Error("Argmax")
	}
}

func TestCheckWeights(t *testing.T) {
	for _, c := range []struct {
		w    []float64
		n    int
		want string
	}{
		{nil, 3, ""},
		{[]float64{0, 2, 0.5}, 3, ""},
		{[]float64{1, 1}, 3, "2 weights for 3 samples"},
		{[]float64{1, -1, 1}, 3, "weight 1 is -1"},
		{[]float64{1, math.NaN(), 1}, 3, "weight 1 is NaN"},
		{[]float64{math.Inf(1), 1, 1}, 3, "weight 0 is +Inf"},
		{[]float64{0, 0, 0}, 3, "all 3 weights are zero"},
	} {
		err := CheckWeights(c.w, c.n)
		if c.want == "" {
			if err != nil {
				t.Errorf("CheckWeights(%v) = %v, want nil", c.w, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrWeights) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckWeights(%v) = %v, want ErrWeights with %q", c.w, err, c.want)
		}
	}
	if WeightSum(nil, 4) != 4 || WeightSum([]float64{1, 2.5}, 2) != 3.5 || Weight(nil, 7) != 1 {
		t.Error("WeightSum/Weight: nil must mean all 1")
	}
}

// TestTemperedSoftmax: the logits (0, log 3) at temperature 2 are the
// softmax of (0, log 3 / 2): (1, sqrt 3) / (1 + sqrt 3); z is not written.
func TestTemperedSoftmax(t *testing.T) {
	z := []float64{0, math.Log(3)}
	p := TemperedSoftmax(z, 2)
	s := math.Sqrt(3)
	if math.Abs(p[0]-1/(1+s)) > 1e-15 || math.Abs(p[1]-s/(1+s)) > 1e-15 || z[1] != math.Log(3) {
		t.Errorf("TemperedSoftmax = %v (z %v), want [%v %v]", p, z, 1/(1+s), s/(1+s))
	}
}
