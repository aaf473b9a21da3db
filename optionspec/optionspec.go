// Package optionspec declares the options of a library call as every front
// end names them: the flag of the calib command (without the dashes), the
// key of the C ABI's JSON and Python's keyword (with "_" for "-"). A
// package that owns options (calibtest, recal, bandwidth) declares each one
// once, as a Spec of its options struct: its name, kind, default, usage
// and which choices read it; the command line registers its flags from the
// declarations (Register), and every front end hands the text it was given
// to the package's Parse function, so that the checks, the defaults and
// the messages are the package's own.
//
// Errors are *Error values naming the option; their text starts with that
// name (`resamples "0": want an integer in [1, 1000000]`), and a command
// line puts "--" before it.
package optionspec

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Kind is the type of an option's value: how a flag, a JSON value or a
// keyword gives it. Its String is the type's name as pflag prints it.
type Kind int

const (
	Text   Kind = iota // a name, a number or a comma-separated list, parsed by the option
	Bool               // true or false
	Int                // an integer
	Uint64             // an integer >= 0
	Float              // a finite number
)

// String returns the kind's type name: string, bool, int, uint64 or
// float64.
func (k Kind) String() string {
	switch k {
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Uint64:
		return "uint64"
	case Float:
		return "float64"
	}
	return "string"
}

// Option describes one option.
type Option struct {
	Name    string // "max-seconds"
	Kind    Kind   // how its value is written
	Default string // its default, as text ("60", "false"); "" for none
	Usage   string // one line for the flag's help
	// ReadBy are the choices (tests, methods, objectives) that read the
	// option; nil: every call reads it. Given while none of them is
	// chosen, it would be ignored without a word, and Unread refuses it.
	ReadBy []string
}

// Spec is an Option with its setter on the options struct T.
type Spec[T any] struct {
	Option
	// Set parses text (range included) onto o; a plain error is the
	// reason, made an Error of the option by Parse.
	Set func(o *T, text string) error
}

// Options returns the descriptions of specs, in order.
func Options[T any](specs []Spec[T]) []Option {
	out := make([]Option, len(specs))
	for i, s := range specs {
		out[i] = s.Option
	}
	return out
}

// Error is an option that cannot be used: Option names it, Err says what
// is wrong in words that start with its name.
type Error struct {
	Option string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns the Error of option with the formatted text.
func Errorf(option, format string, args ...any) error {
	return &Error{Option: option, Err: fmt.Errorf(format, args...)}
}

// Given reports which options a front end gave by name.
type Given map[string]bool

// Parse sets the options of text on o, keyed by option name ("_" may
// stand for "-"): each spec in order, from its text where given, else
// from its Default (none for ""). An unknown key, an option given twice
// (as "a_b" and "a-b"), a list of a Text option with an empty item or one
// twice, and a bad value are Errors naming the option. It returns the
// options given.
func Parse[T any](specs []Spec[T], o *T, text map[string]string) (Given, error) {
	given, values := Given{}, map[string]string{}
	keys := map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(text)) {
		name := strings.ReplaceAll(key, "_", "-")
		i := slices.IndexFunc(specs, func(s Spec[T]) bool { return s.Name == name })
		if i < 0 {
			names := make([]string, len(specs))
			for j, s := range specs {
				names[j] = s.Name
			}
			return nil, Errorf(key, "unknown option %q (valid: %s)", key, strings.Join(names, ", "))
		}
		if first, twice := keys[name]; twice {
			return nil, Errorf(name, "%s given twice (as %q and %q)", name, first, key)
		}
		keys[name], given[name], values[name] = key, true, text[key]
	}
	for _, s := range specs {
		t, ok := values[s.Name]
		if !ok {
			if s.Default == "" {
				continue
			}
			t = s.Default
		}
		if err := s.set(o, t); err != nil {
			return nil, err
		}
	}
	return given, nil
}

// set runs the spec's setter on text, its plain errors made Errors of
// the option.
func (s Spec[T]) set(o *T, text string) error {
	if s.Kind == Text {
		if err := ListItems(s.Name, text); err != nil {
			return err
		}
	}
	err := s.Set(o, text)
	if _, ok := err.(*Error); err == nil || ok {
		return err
	}
	return Errorf(s.Name, "%s %v", s.Name, err)
}

// ListItems checks the value v of a Text option: at least one name, none
// empty between commas, none twice.
func ListItems(name, v string) error {
	if strings.TrimSpace(v) == "" {
		return Errorf(name, "%s %q: names nothing; leave the flag out for its default", name, v)
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == "":
			return Errorf(name, "%s %q: an empty name between commas", name, v)
		case seen[item]:
			return Errorf(name, "%s %q: %s given twice", name, v, item)
		}
		seen[item] = true
	}
	return nil
}

// Unread refuses, of the options given, one whose readers (ReadBy) are
// none of chosen, the choices of the option chooser: it would be ignored
// without a word. The options are tried in name order.
func Unread(opts []Option, given Given, chooser string, chosen []string) error {
	opts = slices.Clone(opts)
	slices.SortFunc(opts, func(a, b Option) int { return strings.Compare(a.Name, b.Name) })
	for _, o := range opts {
		if o.ReadBy == nil || !given[o.Name] || slices.ContainsFunc(chosen, func(c string) bool { return slices.Contains(o.ReadBy, c) }) {
			continue
		}
		return Errorf(o.Name, "%s applies to %s %s, not %s", o.Name, chooser, strings.Join(o.ReadBy, ", "), strings.Join(chosen, ", "))
	}
	return nil
}

// The setters of the kinds: each parses the text and sets the field that
// field returns.

// SetBool sets a bool.
func SetBool[T any](field func(o *T) *bool) func(*T, string) error {
	return func(o *T, text string) error {
		v, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("%q: want true or false", text)
		}
		*field(o) = v
		return nil
	}
}

// SetInt sets an int in [lo, hi]; what says the range in words.
func SetInt[T any](lo, hi int, what string, field func(o *T) *int) func(*T, string) error {
	return func(o *T, text string) error {
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q: want %s", text, what)
		}
		*field(o) = n
		return nil
	}
}

// SetUint64 sets a uint64.
func SetUint64[T any](field func(o *T) *uint64) func(*T, string) error {
	return func(o *T, text string) error {
		n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return fmt.Errorf("%q: want an integer >= 0", text)
		}
		*field(o) = n
		return nil
	}
}

// SetFloat sets a finite float64 for which ok holds; what says the range
// in words.
func SetFloat[T any](ok func(x float64) bool, what string, field func(o *T) *float64) func(*T, string) error {
	return func(o *T, text string) error {
		x, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || !ok(x) {
			return fmt.Errorf("%q: want %s", text, what)
		}
		*field(o) = x
		return nil
	}
}

// SetOneOf sets a string that must be one of valid; what lists them in
// words.
func SetOneOf[T any](what string, valid []string, field func(o *T) *string) func(*T, string) error {
	return func(o *T, text string) error {
		if !slices.Contains(valid, text) {
			return fmt.Errorf("%q: %s", text, what)
		}
		*field(o) = text
		return nil
	}
}

// SetText sets a field that parses its own text.
func SetText[T any](field func(o *T) encoding.TextUnmarshaler) func(*T, string) error {
	return func(o *T, text string) error { return field(o).UnmarshalText([]byte(text)) }
}

// FlagMessage is the message of err for a command line: an Error as "--"
// and its text ("--resamples \"0\": want ..."), where the text starts with
// the option's name, else "--name: text"; any other error's own text.
func FlagMessage(err error) string {
	var oe *Error
	if !errors.As(err, &oe) {
		return err.Error()
	}
	msg := oe.Err.Error()
	if oe.Option != "" && !strings.HasPrefix(msg, oe.Option) {
		return "--" + oe.Option + ": " + msg
	}
	return "--" + msg
}
