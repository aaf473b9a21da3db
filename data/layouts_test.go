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

// TestCSVMisleadingLayouts: layouts that were read wrongly or reported
// with a misleading message say what they are: pandas' default to_csv
// (an unnamed index column first: "line 3: row does not sum to 1" because
// line 2's index was 0), the label column first (a row-sum error), a
// trailing comma on every row ("column 5: bad label" where the header
// names column 4 label).
func TestCSVMisleadingLayouts(t *testing.T) {
	for _, c := range []struct {
		name, body, want string
	}{
		{"pandas index", ",0,1,2,label\n0,0.2,0.3,0.5,2\n1,0.6,0.3,0.1,0\n", "index=False"},
		{"label first", "label,p0,p1,p2\n2,0.2,0.3,0.5\n0,0.6,0.3,0.1\n", `column 1 "label"`},
		{"y second", "p0,y,p1\n0.2,1,0.8\n", `column 2 "y"`},
		{"trailing comma", "p0,p1,p2,label\n0.2,0.3,0.5,2,\n0.6,0.3,0.1,0,\n", "line 2: ragged row: 5 fields, the header has 4 (a trailing comma"},
		{"short row", "p0,p1,p2,label\n0.2,0.8,1\n", "3 fields, the header has 4"},
		{"weight column first", "weight,p0,label,p1\n1,0.2,1,0.8\n", `column 3 "label"`},
	} {
		_, err := Parse("p.csv", []byte(c.body), "", nil, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a message with %q", c.name, err, c.want)
		}
	}
	// The usual layouts still load: a header with the label last, a
	// weight column anywhere, no header.
	for _, body := range []string{
		"p0,p1,p2,label\n0.2,0.3,0.5,2\n",
		"weight,p0,p1,p2,label\n2,0.2,0.3,0.5,2\n",
		"0.2,0.3,0.5,2\n0.6,0.3,0.1,0\n",
		"p0,p1,p2\n0.2,0.3,0.5,2\n0.6,0.3,0.1,0\n", // the header names the predictions only
	} {
		if _, err := Parse("p.csv", []byte(body), "", nil, Options{}); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}
