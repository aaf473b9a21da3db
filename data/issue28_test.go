package data

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestNPZProbsAndLogitsRefused: an archive holding both a probs and a
// logits array (which may disagree) is refused, naming both, as JSON
// Lines and Parquet refuse both; so are two label or weight arrays. The
// loader used to take probs silently.
func TestNPZProbsAndLogitsRefused(t *testing.T) {
	const n, k = 6, 3
	logits, probs, labels := randomSet(n, k, 3)
	le := binary.LittleEndian
	p := numpyNPY("<f8", false, []int{n, k}, raw(le, probs))
	z := numpyNPY("<f8", false, []int{n, k}, raw(le, logits))
	y := numpyNPY("<i8", false, []int{n}, raw(le, int64s(labels)))
	w := numpyNPY("<f8", false, []int{n}, raw(le, make([]float64, n)))
	for _, c := range []struct {
		members []npzMember
		want    string
	}{
		{[]npzMember{{"probs", p}, {"logits", z}, {"labels", y}}, `both "probs" and "logits"`},
		{[]npzMember{{"logits", z}, {"p", p}, {"labels", y}}, `both "logits" and "p"`},
		{[]npzMember{{"probs", p}, {"labels", y}, {"y", y}}, `both "labels" and "y"`},
		{[]npzMember{{"probs", p}, {"labels", y}, {"weights", w}, {"sample_weight", w}}, `both "weights" and "sample_weight"`},
	} {
		_, err := Parse("z.npz", numpyNPZ(false, c.members...), "", nil, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "z.npz") {
			t.Errorf("%v: error %v, want one naming %s", c.want, err, c.want)
		}
	}
	// One of each still loads.
	mustParse(t, "z.npz", numpyNPZ(false, npzMember{"logits", z}, npzMember{"labels", y}), "", nil, Options{})
}

// TestScaledWeights: ScaledWeights divides the weights by a power of two
// (exactly 1 for constant weights, any size), records the factor, keeps
// the weights as given in s, and returns s itself when there is nothing
// to do.
func TestScaledWeights(t *testing.T) {
	s, err := Parse("p.csv", []byte("0.2,0.8,1\n0.6,0.4,0\n"), "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.ScaledWeights() != s {
		t.Error("no weights: a copy")
	}
	if err := s.SetWeights([]float64{1, 3}); err != nil {
		t.Fatal(err)
	}
	c := s.ScaledWeights()
	if c == s || c.Weights[0] != 0.25 || c.Weights[1] != 0.75 || c.WeightScale != 4 || c.GivenWeightSum() != 4 || s.Weights[1] != 3 || s.GivenWeightSum() != 4 {
		t.Errorf("scaled %v (scale %v, sum %v); given %v", c.Weights, c.WeightScale, c.GivenWeightSum(), s.Weights)
	}
	if c.ScaledWeights() != c {
		t.Error("scaled twice: a copy")
	}
	for _, v := range []float64{1e160, 1e308, 1e-300, 5e-324} {
		if err := s.SetWeights([]float64{v, v}); err != nil {
			t.Fatal(err)
		}
		c := s.ScaledWeights()
		if c.Weights[0] != 1 || c.Weights[1] != 1 || c.WeightScale != v {
			t.Errorf("constant %g: %v, scale %v", v, c.Weights, c.WeightScale)
		}
	}
}
