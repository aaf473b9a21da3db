package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

type arraysKey struct{}

// arraysOf returns the in-memory set that name stands for in ctx.
func arraysOf(ctx context.Context, name string) (data.Arrays, bool) {
	if ctx == nil {
		return data.Arrays{}, false
	}
	m, _ := ctx.Value(arraysKey{}).(map[string]data.Arrays)
	a, ok := m[name]
	return a, ok
}

// loadArrays builds the data.Set of a with the input flags o: the file
// flags name files, which an array has none of.
func loadArrays(a data.Arrays, name string, o data.Options) (*data.Set, error) {
	if o.Format != "" || o.Labels != "" || o.Weights != "" {
		return nil, usageErrorf("%s is an array in memory: --format, --labels and --weights name files (pass the labels and weights as arrays)", name)
	}
	return a.Load(name, o)
}

// Exec runs the calib command line args (without the program name), as
// Main does, with the arrays standing for the files their keys name, and
// returns the exit status and the error (nil on success; its message is
// the one line Main prints). A command's output goes to stdout; progress
// and notes to stderr.
func Exec(ctx context.Context, args []string, arrays map[string]data.Arrays, stdout, stderr io.Writer) (int, error) {
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
