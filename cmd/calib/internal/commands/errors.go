package commands

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/cmd/calib/internal/inputerr"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train"
)

// inputError marks errors caused by the user's input or flags (exit 2).
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// InputError marks err as caused by the input or the flags (exit status
// 2).
func InputError(err error) error { return inputError{err} }

// usageErrorf returns an input error for bad flags or arguments.
func usageErrorf(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

// optionError turns a library's error about the value of flag (an
// evaluate.ErrOptions or report.ErrOptions error, an unknown enumeration
// name) into a usage error "FLAG: message", the library's prefix dropped;
// with flag "" the message names the option itself ("bandwidth \"x\":
// ...") and gets the dashes: "--bandwidth \"x\": ...".
func optionError(flag string, err error) error {
	if flag == "" && (errors.As(err, new(*evaluate.OptionError)) || errors.As(err, new(*optionspec.Error))) {
		// The option's name, where the message does not begin with it
		// ("--ci: bootstrap intervals need ...", not "--bootstrap ...").
		return usageErrorf("%s", inputerr.Message(err))
	}
	msg := optionMessage(err)
	if flag == "" {
		return usageErrorf("--%s", msg)
	}
	return usageErrorf("%s: %s", flag, msg)
}

// optionMessage is the message of an option error without the library's
// "bad options" (an evaluate or report OptionError's Err), or err's.
func optionMessage(err error) string {
	var eo *evaluate.OptionError
	var ro *report.OptionError
	switch {
	case errors.As(err, &eo):
		return eo.Err.Error()
	case errors.As(err, &ro):
		return ro.Err.Error()
	}
	return err.Error()
}

// flagValueKinds names, for pflag's parse errors, what the flag wanted.
var flagValueKinds = map[string]string{
	"strconv.ParseInt":   "an integer",
	"strconv.ParseUint":  "a non-negative integer",
	"strconv.ParseFloat": "a number",
	"strconv.ParseBool":  "true or false",
}

// FlagError rewrites pflag's "invalid argument" errors, which quote Go's
// strconv, in the user's terms: invalid argument "abc" for "--bins" flag:
// want an integer.
func FlagError(err error) error {
	msg := err.Error()
	for fn, want := range flagValueKinds {
		i := strings.Index(msg, ": "+fn+":")
		if i < 0 {
			continue
		}
		switch {
		case strings.HasSuffix(msg, "value out of range"):
			want += " in range (this one is too large)"
		case fn != "strconv.ParseFloat" && fn != "strconv.ParseBool" && isExponent(msg[:i]):
			want += " written in digits, without an exponent"
		}
		return fmt.Errorf("%s: want %s", msg[:i], want)
	}
	return err
}

// isExponent reports whether pflag's message "invalid argument "V" for
// ..." quotes a number V written with an exponent (5e9).
func isExponent(msg string) bool {
	v, _, ok := strings.Cut(strings.TrimPrefix(msg, `invalid argument "`), `"`)
	_, err := strconv.ParseFloat(v, 64)
	return ok && err == nil && strings.ContainsAny(v, "eE")
}

// isInputError reports errors caused by the input: bad flags and arguments,
// bad data files, options the library refuses, too few samples, no kernel
// density anywhere.
func isInputError(err error) bool {
	var ie inputError
	return errors.As(err, &ie) || inputerr.Is(err) || errors.Is(err, report.ErrOptions) || errors.Is(err, train.ErrInput) ||
		strings.HasPrefix(err.Error(), "unknown command")
}

// newProvenance records calib's version, cmd, its arguments, every flag
// with its value (set or default) and --seed, where the command has one;
// the caller adds the inputs (AddInput).
func newProvenance(cmd *Command, args []string) *data.Provenance {
	p := &data.Provenance{Version: data.Version(), Command: cmd.CommandPath(), Args: args, Options: map[string]string{}}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			p.Options[f.Name] = f.Value.String()
		}
	})
	if f := cmd.Flags().Lookup("seed"); f != nil {
		if v, err := cmd.Flags().GetUint64("seed"); err == nil {
			p.Seed = &v
		}
	}
	return p
}

// OneLine is s on one line (line breaks as spaces): how calib prints a
// message, on the command line and through the C ABI.
func OneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
