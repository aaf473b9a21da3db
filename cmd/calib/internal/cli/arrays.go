package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/recal"
)

// Arrays is a prediction set held in memory that a command reads in place
// of the file its argument names (Exec's arrays, keyed by that argument):
// the C ABI of cmd/calib/libcalib passes a caller's arrays this way, so
// that every flag means what it means on the command line and the output
// is the command's own.
type Arrays struct {
	// Values holds n rows of Cols predictions, row-major: probabilities,
	// or logits under --logits (Cols = 1: the binary case, p1 or its
	// logit). Values is read, never written (--renormalize works on a
	// copy).
	Values []float64
	Cols   int
	// Labels holds n labels in 0..K-1; nil for a command that reads
	// unlabelled predictions, or to have the command say none were given.
	Labels []int
	// Weights holds n sample weights, or nil (every weight 1).
	Weights []float64
}

type arraysKey struct{}

// arraysOf returns the in-memory set that name stands for in ctx.
func arraysOf(ctx context.Context, name string) (Arrays, bool) {
	if ctx == nil {
		return Arrays{}, false
	}
	m, _ := ctx.Value(arraysKey{}).(map[string]Arrays)
	a, ok := m[name]
	return a, ok
}

// Load builds the data.Set of a (data.New: the file loaders' checks, errors
// naming name and the 1-based row and column) with the input flags o.
func (a Arrays) Load(name string, o data.Options) (*data.Set, error) {
	if o.Format != "" || o.Labels != "" || o.Weights != "" {
		return nil, usageErrorf("%s is an array in memory: --format, --labels and --weights name files (pass the labels and weights as arrays)", name)
	}
	values := a.Values
	if o.Renormalize && !o.Logits {
		values = slices.Clone(values) // renormalised rows are written in place
	}
	if !o.Unlabeled && a.Labels == nil {
		return nil, &data.Error{File: name, Err: fmt.Errorf("%w: pass the labels", data.ErrNoLabels)}
	}
	s, err := data.New(values, a.Cols, a.Labels, o.Logits, o)
	var de *data.Error
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

// Exec runs the calib command line args (without the program name), as
// Main does, with the arrays standing for the files their keys name, and
// returns the exit status and the error (nil on success; its message is
// the one line Main prints). A command's output goes to stdout; progress
// and notes to stderr.
func Exec(ctx context.Context, args []string, arrays map[string]Arrays, stdout, stderr io.Writer) (int, error) {
	if len(arrays) > 0 {
		ctx = context.WithValue(ctx, arraysKey{}, arrays)
	}
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	// An option the library refused, named as the flag is spelled.
	if eo := (*evaluate.OptionError)(nil); err != nil && errors.As(err, &eo) {
		err = optionError("", err)
	}
	switch {
	case ctx.Err() != nil:
		return ExitInterrupted, fmt.Errorf("interrupted: %w", ctx.Err())
	case err == nil:
		return ExitOK, nil
	case isInputError(err):
		return ExitInput, err
	}
	return ExitFailure, err
}

// ApplyArrays applies the map written by calib fit (its JSON, mapJSON) to
// the predictions a, as calib apply does to a file: a is read unlabelled,
// as logits under logits, and the calibrated set returned (Probs: n rows
// of the map's K probabilities).
func ApplyArrays(mapJSON []byte, name string, a Arrays, logits bool) (*data.Set, error) {
	c, err := recal.Load(bytes.NewReader(mapJSON))
	if err != nil {
		return nil, inputError{fmt.Errorf("map: %w", err)}
	}
	s, err := a.Load(name, data.Options{Logits: logits, Unlabeled: true})
	if err != nil {
		return nil, inputError{err}
	}
	return recal.Apply(c, s)
}
