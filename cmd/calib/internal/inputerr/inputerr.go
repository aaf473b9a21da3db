// Package inputerr tells the errors of the caller's input (bad data, bad
// options, too few samples) from calib's own failures, for the front ends
// that answer them differently: the command line's exit status 2 and the
// C ABI's code 2.
package inputerr

import (
	"errors"
	"fmt"
	"math"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/smooth"
	"github.com/calib-dev/calib/variational"
)

// inputs are the sentinel errors of the library packages that mean the
// caller's input.
var inputs = []error{
	kde.ErrTooFew, kde.ErrNoDensity, data.ErrTooFew, calibtest.ErrTooFew, calibtest.ErrNoVariance, calibtest.ErrInput,
	recal.ErrInput, evaluate.ErrOptions, variational.ErrInput, smooth.ErrInput, convention.ErrUnsupported,
}

// Is reports whether err is caused by the input: a data file or array
// that cannot be read or used (data.Error, data.StreamError), options
// the library refuses, too few samples, no kernel density anywhere.
func Is(err error) bool {
	var de *data.Error
	var se *data.StreamError
	var oe *optionspec.Error
	if errors.As(err, &de) || errors.As(err, &se) || errors.As(err, &oe) || errors.Is(err, calibtest.ErrTooSlow) {
		return true
	}
	for _, target := range inputs {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Message is the message of err as a command line says it: an option
// error as its flag and the reason ("--resamples \"0\": want ...",
// evaluate's and optionspec's), a test refused for its estimated run time
// with the flag that bounds it, any other error's own text.
func Message(err error) string {
	var oe *optionspec.Error
	var ce *calibtest.CostError
	switch {
	case errors.As(err, &oe):
		return optionspec.FlagMessage(err)
	case errors.As(err, &ce):
		bound := "0 (no bound)"
		if !math.IsInf(ce.MaxSeconds, 1) {
			bound = fmt.Sprint(ce.MaxSeconds)
		}
		return fmt.Sprintf("--tests: %s, past --max-seconds %s: --max-seconds 0 runs it anyway", ce.Estimates(), bound)
	}
	return evalflag.FlagMessage(err)
}
