package data

import (
	"errors"
	"fmt"
	"slices"
)

// Arrays is a prediction set held in a caller's memory (the C ABI's
// arrays, which the Python package passes): what a file would hold,
// before the loaders' checks.
type Arrays struct {
	// Values holds n rows of Cols predictions, row-major: probabilities,
	// or logits with Options.Logits (Cols = 1: the binary case, p1 or its
	// logit). Values is read, never written (Options.Renormalize works on
	// a copy).
	Values []float64
	Cols   int
	// Labels holds n labels in 0..K-1; nil for unlabelled predictions
	// (Options.Unlabeled), else an error that says to pass them.
	Labels []int
	// Weights holds n sample weights, or nil (every weight 1).
	Weights []float64
}

// Load builds the Set of a (New: the file loaders' checks, errors naming
// name, the 1-based row and column) with the input options o, whose file
// options (Format, Labels, Weights) it does not read.
func (a Arrays) Load(name string, o Options) (*Set, error) {
	values := a.Values
	if o.Renormalize && !o.Logits {
		values = slices.Clone(values) // renormalised rows are written in place
	}
	if !o.Unlabeled && a.Labels == nil {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: pass the labels", ErrNoLabels)}
	}
	s, err := New(values, a.Cols, a.Labels, o.Logits, o)
	var de *Error
	if errors.As(err, &de) {
		c := *de
		c.File = name
		return nil, &c
	}
	if err != nil {
		return nil, err
	}
	s.File = name
	if a.Weights != nil {
		if err := s.SetWeights(a.Weights); err != nil {
			return nil, err
		}
	}
	return s, nil
}
