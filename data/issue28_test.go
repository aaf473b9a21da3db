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
