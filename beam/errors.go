package beam

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
)

// Error is an error of this package: its message is "beam: " and Err's
// (Reason).
type Error struct{ Err error }

func (e *Error) Error() string { return "beam: " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// errorf returns an Error of the message format.
func errorf(format string, args ...any) error { return &Error{fmt.Errorf(format, args...)} }

// Reason returns the message of err without this package's name where
// err is this package's (an *Error), else err's message.
func Reason(err error) string {
	if e, ok := err.(*Error); ok {
		return e.Err.Error()
	}
	return err.Error()
}

// The driver finds the message of an error of calib's functions in the
// runner's error, which wraps it in the runner's own report of the stage,
// the plan and the bundle (about 30 lines on Prism): the functions
// bracket it, with the exit status it deserves.
const markOpen, markClose = "<<calib-error ", ">>"

// marked returns err with its message, on one line and without the
// package prefix, bracketed for PipelineError, with status 2 for an error
// of the data (a shard that does not match the others, a bad row, a file
// that cannot be read, no labels) and 1 for others. nil stays nil; an
// error already marked is returned as it is.
func marked(err error) error {
	if err == nil || strings.Contains(err.Error(), markOpen) {
		return err
	}
	status := 1
	if DataFault(err) {
		status = 2
	}
	msg := Reason(err)
	if errors.Is(err, evaluate.ErrOptions) { // an option the data refuse: named as calib-beam's flag
		msg = evalflag.FlagMessage(err)
	}
	msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	return fmt.Errorf("%s%d %s%s", markOpen, status, msg, markClose)
}

// DataFault reports an error of the data or of options the data refuse
// (calib-beam's exit status 2): a bad or unreadable file, a shard that
// does not match the others, no labels, bad weights, no rows, --ks-r
// above K.
func DataFault(err error) bool {
	var de *data.Error
	var se *data.StreamError
	return errors.As(err, &de) || errors.As(err, &se) || errors.Is(err, data.ErrNoLabels) || errors.Is(err, data.ErrWeights) || errors.Is(err, data.ErrEmpty) || errors.Is(err, evaluate.ErrOptions)
}

// PipelineError returns the message of the first error of calib's
// functions (see marked) that the text of err, a runner's error, holds,
// and the exit status it deserves (2: the data's fault, 1: another); ok is
// false when err holds none.
func PipelineError(err error) (msg string, status int, ok bool) {
	if err == nil {
		return "", 0, false
	}
	s := err.Error()
	i := strings.Index(s, markOpen)
	if i < 0 {
		return "", 0, false
	}
	rest := s[i+len(markOpen):]
	j := strings.Index(rest, markClose)
	if j < 0 || len(rest) < 2 {
		return "", 0, false
	}
	status = 1
	if rest[0] == '2' {
		status = 2
	}
	// A runner may quote the message (escaping its quotes).
	msg = strings.ReplaceAll(rest[2:j], `\"`, `"`)
	return msg, status, true
}
