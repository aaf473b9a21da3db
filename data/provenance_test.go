package data

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestProvenance: AddInput records a set as read (with the sum of its
// weights) and chains; a nil set adds nothing; Version is never empty.
func TestProvenance(t *testing.T) {
	s, err := Load("../testdata/golden/ecekde/c02_n200_k3.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := make([]float64, s.N)
	for i := range w {
		w[i] = 0.5
	}
	ws := *s
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	p := (&Provenance{}).AddInput("val", s, "y.npy").AddInput("test", &ws, "").AddInput("x", nil, "")
	want := []Input{{Role: "val", File: s.File, Labels: "y.npy", Kind: "probabilities", N: 200, K: 3},
		{Role: "test", File: s.File, Kind: "probabilities", N: 200, K: 3, WeightSum: 100}}
	if !slices.Equal(p.Inputs, want) {
		t.Errorf("inputs %+v\nwant %+v", p.Inputs, want)
	}
	if (*Provenance)(nil).AddInput("", s, "") != nil {
		t.Error("nil provenance")
	}
	if Version() == "" {
		t.Error("empty version")
	}
}

// TestProvenanceWeightSumPastRange: a set whose weights sum past the
// float64 range records its weight sum as null, and the provenance still
// encodes (a JSON output of such a set must not fail).
func TestProvenanceWeightSumPastRange(t *testing.T) {
	s, err := New([]float64{0.3, 0.7, 0.6, 0.4}, 2, []int{1, 0}, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetWeights([]float64{1e308, 1e308}); err != nil {
		t.Fatal(err)
	}
	p := (&Provenance{Command: "x"}).AddInput("", s, "")
	b, err := json.Marshal(p)
	if err != nil || !strings.Contains(string(b), `"weight_sum":null`) {
		t.Errorf("provenance %s, %v", b, err)
	}
}
