package data

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestArraysLoad: arrays load as the same values would from a file, their
// errors name the arrays' name and the 1-based row and column, labels are
// asked for unless unlabelled, weights are set, and renormalising never
// writes the caller's buffer.
func TestArraysLoad(t *testing.T) {
	v := []float64{0.2, 0.8, 0.6, 0.4, 0.5, 0.5}
	s, err := Arrays{Values: v, Cols: 2, Labels: []int{1, 0, 1}, Weights: []float64{1, 2, 3}}.Load("probs", Options{})
	if err != nil || s.N != 3 || s.K != 2 || s.File != "probs" || !slices.Equal(s.Weights, []float64{1, 2, 3}) {
		t.Fatalf("%v %+v", err, s)
	}
	bad := slices.Clone(v)
	bad[3] = math.NaN()
	_, err = Arrays{Values: bad, Cols: 2, Labels: []int{1, 0, 1}}.Load("probs", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "probs: row 2, column 2: ") {
		t.Errorf("NaN: %v", err)
	}
	if _, err := (Arrays{Values: v, Cols: 2}).Load("probs", Options{}); !errors.Is(err, ErrNoLabels) || !strings.Contains(err.Error(), "pass the labels") {
		t.Errorf("no labels: %v", err)
	}
	if _, err := (Arrays{Values: v, Cols: 2}).Load("probs", Options{Unlabeled: true}); err != nil {
		t.Errorf("unlabelled: %v", err)
	}
	off := []float64{0.3, 0.9, 0.6, 0.4, 0.5, 0.5}
	keep := slices.Clone(off)
	if _, err := (Arrays{Values: off, Cols: 2, Labels: []int{1, 0, 1}}).Load("probs", Options{Renormalize: true}); err != nil || !slices.Equal(off, keep) {
		t.Errorf("renormalize: %v, caller's values %v", err, off)
	}
}
