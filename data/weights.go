package data

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
)

// weightNames are the header names (any case) of a CSV weight column, the
// JSON Lines key ("weight") and the NPZ array names of sample weights.
var (
	weightNames    = []string{"weight", "weights", "sample_weight"}
	npzWeightNames = []string{"weights", "weight", "sample_weight"}
)

// weightColumn is a parsed weight vector with the position of each weight.
type weightColumn struct {
	positions
	values []float64
	col    int // 1-based column in its file (0 when not a column)
	// partial marks the weights of a chunk of a streamed file: they may
	// be all zero here (Chunks checks that over the whole file).
	partial bool
}

// weightColumnOf returns the 0-based index of the column of a CSV header
// named one of weightNames, or -1.
func weightColumnOf(header []string) int {
	return slices.IndexFunc(header, func(h string) bool {
		return slices.Contains(weightNames, strings.ToLower(strings.TrimSpace(h)))
	})
}

// check validates n weights and returns them: each finite and >= 0 (the
// error names its line or row), not all zero, as many as the rows.
func (w *weightColumn) check(n int) ([]float64, error) {
	if len(w.values) != n {
		return nil, &Error{File: w.file, Err: fmt.Errorf("%w: %d weights for %d prediction rows", ErrWeights, len(w.values), n)}
	}
	if err := w.checkEach(); err != nil {
		return nil, err
	}
	if !w.partial && !slices.ContainsFunc(w.values, func(v float64) bool { return v > 0 }) {
		return nil, &Error{File: w.file, Err: fmt.Errorf("%w: all %d weights are zero", ErrWeights, n)}
	}
	return w.values, nil
}

// checkEach checks that every weight is finite and >= 0.
func (w *weightColumn) checkEach() error {
	for i, v := range w.values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return w.err(i, w.col, fmt.Errorf("%w: weight %v; weights must be finite and >= 0", ErrWeights, v))
		}
	}
	return nil
}

// ParseWeights reads a weights file's contents (the file named name): NPY
// (any numeric dtype; shape (n,) or (n, 1)) or text with one number per
// line and an optional header line. It checks each weight (finite, >= 0;
// the error names its line or row) but not their number or sum, which
// depend on the predictions: Load does that, or Set.SetWeights.
func ParseWeights(name string, b []byte) ([]float64, error) {
	w, err := parseWeights(name, b)
	if err != nil {
		return nil, err
	}
	if err := w.checkEach(); err != nil {
		return nil, err
	}
	return w.values, nil
}

// LoadWeights reads the weights file name as ParseWeights does.
func LoadWeights(name string) ([]float64, error) {
	b, err := readFile(name, "a weights file")
	if err != nil {
		return nil, err
	}
	return ParseWeights(name, b)
}

func parseWeights(name string, b []byte) (*weightColumn, error) {
	if FormatOf(name) == "npy" {
		a, err := parseNPY(name, b)
		if err != nil {
			return nil, err
		}
		if len(a.shape) > 2 || (len(a.shape) == 2 && a.shape[1] != 1) {
			return nil, &Error{File: name, Err: fmt.Errorf("%w: weights need shape (n,) or (n, 1), got %v", ErrShape, a.shape)}
		}
		return &weightColumn{positions: positions{file: name}, values: a.values, col: 1}, nil
	}
	t, _, err := parseCSV(name, bytes.NewReader(b), csvLayout{plain: true})
	if err != nil {
		return nil, err
	}
	if t.cols > 1 {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: a weights file has one column, got %d", ErrShape, t.cols)}
	}
	return &weightColumn{positions: t.positions, values: t.values, col: 1}, nil
}

// attachWeights checks the weights file's weights against the table and
// attaches them; a file that carries weights itself is refused.
func attachWeights(t *table, w *weightColumn) error {
	if t.weights != nil {
		return &Error{File: t.file, Err: fmt.Errorf("%w: the file has a weight column and a weights file %s was given; give one", ErrWeights, w.file)}
	}
	if n := t.rows(); len(w.values) != n {
		return &Error{File: w.file, Err: fmt.Errorf("%w: %d weights for the %d prediction rows of %s", ErrWeights, len(w.values), n, t.file)}
	}
	t.weights = w
	return nil
}
