// Package pkgerr is the one shape of an error that a calib package names
// itself in ("convention: unknown convention ..."): the package's name,
// the option or field it concerns, and the reason, kept apart, so that a
// caller that names the option itself (the command line's "--convention
// "x": ...") prints the reason as it is instead of cutting the text.
package pkgerr

import (
	"errors"
	"fmt"
)

// Error is an error of package Pkg about Field (the option or field it
// concerns; "" when none). Its text is Pkg, ": ", then Err's.
type Error struct {
	Pkg   string
	Field string
	Err   error
}

func (e *Error) Error() string { return e.Pkg + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns the *Error of package pkg whose reason is the formatted
// text (%w wraps, as in fmt.Errorf).
func Errorf(pkg, format string, args ...any) error {
	return &Error{Pkg: pkg, Err: fmt.Errorf(format, args...)}
}

// FieldErrorf is Errorf about field.
func FieldErrorf(pkg, field, format string, args ...any) error {
	return &Error{Pkg: pkg, Field: field, Err: fmt.Errorf(format, args...)}
}

// Reason returns err's text without the name of the package that made it:
// the reason of the first *Error in err's chain, or err's text when there
// is none.
func Reason(err error) string {
	if e := (*Error)(nil); errors.As(err, &e) {
		return e.Err.Error()
	}
	return err.Error()
}

// Field returns the field of the first *Error in err's chain ("" when
// there is none).
func Field(err error) string {
	if e := (*Error)(nil); errors.As(err, &e) {
		return e.Field
	}
	return ""
}
