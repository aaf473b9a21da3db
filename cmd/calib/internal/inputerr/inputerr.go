// Package inputerr tells the errors of the caller's input (bad data, bad
// options, too few samples) from calib's own failures, for the front ends
// that answer them differently: the command line's exit status 2 and the
// C ABI's code 2.
package inputerr

import (
	"errors"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
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
	if errors.As(err, &de) || errors.As(err, &se) {
		return true
	}
	for _, target := range inputs {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
