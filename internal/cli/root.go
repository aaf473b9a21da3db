// Package cli implements the calib command line: one cobra command per file,
// each a thin layer over the library packages.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
)

// Exit statuses.
const (
	ExitOK          = 0
	ExitFailure     = 1   // any other failure
	ExitInput       = 2   // bad input data or bad usage
	ExitInterrupted = 130 // stopped by Ctrl-C (SIGINT) or a cancelled context: 128 + SIGINT, as shells report it
)

// inputError marks errors caused by the user's input or flags (exit 2).
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// usageErrorf returns an input error for bad flags or arguments.
func usageErrorf(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

// NewRoot returns the calib command with its subcommands.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "calib",
		Short: "Measure and fix the calibration of probabilistic classifiers",
		Long: `calib measures how well a classifier's predicted probabilities match the
observed frequencies (ECE^KDE: consistent, differentiable Lp calibration error
for canonical, marginal and top-label calibration; binned ECE, KS, MMCE,
proper scores) from a file of predictions (probabilities or logits) and
labels, fits recalibration maps (fit, apply, compare), and draws the figures
and the HTML report (plot, report). Start with: calib demo.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version(),
		// Every flag is checked before a command reads any data.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return validateFlags(cmd) },
	}
	root.SetVersionTemplate("calib {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return inputError{flagError(err)} })
	root.AddCommand(newEvalCmd(), newBandwidthCmd(), newDemoCmd(), newFitCmd(), newApplyCmd(), newCompareCmd(), newReportCmd(), newPlotCmd(), newExperimentCmd(), newTrainCmd())
	return root
}

// Main runs calib with the arguments args (without the program name) and
// returns the exit status; errors are printed to stderr on one line.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if ctx.Err() != nil {
		// Interrupted: whatever the command returned, nothing more is
		// printed (outputs are written atomically, so none is partial).
		fmt.Fprintln(stderr, "calib: interrupted")
		return ExitInterrupted
	}
	if err == nil {
		return ExitOK
	}
	msg := oneLineError(err)
	fmt.Fprintf(stderr, "calib: %s\n", msg)
	if isInputError(err) {
		return ExitInput
	}
	return ExitFailure
}

// flagValueKinds names, for pflag's parse errors, what the flag wanted.
var flagValueKinds = map[string]string{
	"strconv.ParseInt":   "an integer",
	"strconv.ParseUint":  "a non-negative integer",
	"strconv.ParseFloat": "a number",
	"strconv.ParseBool":  "true or false",
}

// flagError rewrites pflag's "invalid argument" errors, which quote Go's
// strconv, in the user's terms: invalid argument "abc" for "--bins" flag:
// want an integer.
func flagError(err error) error {
	msg := err.Error()
	for fn, want := range flagValueKinds {
		if i := strings.Index(msg, ": "+fn+":"); i >= 0 {
			return fmt.Errorf("%s: want %s", msg[:i], want)
		}
	}
	return err
}

// isInputError reports errors caused by the input: bad flags and arguments,
// bad data files, options the library refuses, too few samples, no kernel
// density anywhere.
func isInputError(err error) bool {
	var ie inputError
	var de *data.Error
	return errors.As(err, &ie) || errors.As(err, &de) ||
		errors.Is(err, kde.ErrTooFew) || errors.Is(err, kde.ErrNoDensity) || errors.Is(err, data.ErrTooFew) || errors.Is(err, recal.ErrInput) ||
		errors.Is(err, evaluate.ErrOptions) || errors.Is(err, report.ErrOptions) ||
		strings.HasPrefix(err.Error(), "unknown command")
}
