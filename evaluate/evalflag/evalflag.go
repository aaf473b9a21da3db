// Package evalflag holds the command-line face of evaluate.Options: the
// flags of calib eval and calib-beam, registered from the options'
// declarations (evaluate.OptionSpecs) on either command's flag set (the
// standard library's flag.FlagSet and pflag's have the methods of
// FlagSet), and read back into evaluate.Options (or StreamOptions) by the
// options' own Set and Settle, so that every front end takes the same text
// by the same rules.
//
// Errors are *evaluate.OptionError values naming the option as calib eval
// spells it without the dashes; their text, after evaluate.ErrOptions's,
// starts with that name ("mode: unknown notion ...", `bandwidth "x": want
// auto or a positive number`).
package evalflag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/optionspec"
)

// FlagSet is what Register needs of a flag set: *flag.FlagSet and
// *pflag.FlagSet both have these methods.
type FlagSet = optionspec.FlagSet

// Command says which command registers the flags: calib-beam has the
// options a stream honours only, with its usage texts.
type Command int

const (
	// Eval is calib eval (in memory, or streamed with --stream): every
	// option, the stream's own with "with --stream: " before their usage.
	Eval Command = iota
	// Beam is calib-beam: always streamed; the options a stream honours.
	Beam
	// InMemory is a command that evaluates a set in memory only (calib
	// report, calib demo): every option but the stream's own.
	InMemory
)

// Flags are the options of evaluate as a flag set holds them once it is
// parsed: one variable per option of evaluate.OptionSpecs, of its kind.
type Flags struct {
	values []*value
}

// value is one option's variable.
type value struct {
	spec evaluate.Option
	v    *optionspec.Value
}

// text returns the variable's value as the option's text.
func (v *value) text() string { return v.v.Text() }

// Register defines on fs a flag for every option of evaluate.OptionSpecs
// that cmd has (calib-beam: those a stream honours), with the option's
// default and usage, and returns the variables they set.
func Register(fs FlagSet, cmd Command) *Flags {
	f := &Flags{}
	for _, spec := range evaluate.OptionSpecs() {
		if (cmd == Beam && !spec.Stream) || (cmd == InMemory && spec.StreamOnly) {
			continue
		}
		usage := spec.Usage
		switch {
		case cmd == Beam && spec.StreamUsage != "":
			usage = spec.StreamUsage
		case cmd == Eval && spec.StreamOnly:
			usage = "with --stream: " + usage
		}
		// The defaults are the declarations' own text, valid by
		// construction (TestRegisterDefaults).
		o := optionspec.Option{Name: spec.Name, Kind: spec.Kind, Default: spec.Default}
		v := &value{spec: spec, v: optionspec.RegisterOne(fs, o, usage)}
		f.values = append(f.values, v)
	}
	return f
}

// Text returns the value of the option name as text (its default if it
// was not given), and whether the flags have it.
func (f *Flags) Text(name string) (string, bool) {
	for _, v := range f.values {
		if v.spec.Name == name {
			return v.text(), true
		}
	}
	return "", false
}

// Options returns the options of an evaluation in memory: every option
// but the stream's own (left to the command, which refuses them) set
// (evaluate.Options.Set) from its flag, given (given reports which flags
// were) or not, where its text is not empty, then settled
// (evaluate.Options.Settle, defaults the metrics of Metrics nil: nil for
// evaluate.DefaultMetrics). Errors are OptionErrors.
func (f *Flags) Options(given func(name string) bool, defaults evaluate.MetricSet) (evaluate.Options, error) {
	var o evaluate.Options
	inMemory := map[string]bool{}
	for _, v := range f.values {
		if v.spec.StreamOnly {
			continue
		}
		inMemory[v.spec.Name] = true
		if !given(v.spec.Name) && v.text() == "" {
			continue
		}
		if err := o.Set(v.spec.Name, v.text()); err != nil {
			return o, err
		}
	}
	return o, o.Settle(func(name string) bool { return inMemory[name] && given(name) }, defaults)
}

// CheckStreamOnly checks the values of the stream's own options given
// (evaluate.StreamOptions.Set), for a command that decides whether to
// stream from its input (calib eval): a bad value is refused before the
// input is looked at.
func (f *Flags) CheckStreamOnly(given func(name string) bool) error {
	var o evaluate.StreamOptions
	for _, v := range f.values {
		if v.spec.StreamOnly && given(v.spec.Name) {
			if err := o.Set(v.spec.Name, v.text()); err != nil {
				return err
			}
		}
	}
	return nil
}

// StreamOptions returns the options of a streamed evaluation: the options
// a stream honours set from their flags as Options does, those it does not
// only where given (the stream then refuses them), then settled
// (evaluate.StreamOptions.Settle).
func (f *Flags) StreamOptions(given func(name string) bool) (evaluate.StreamOptions, error) {
	var o evaluate.StreamOptions
	for _, v := range f.values {
		if !given(v.spec.Name) && (!v.spec.Stream || v.text() == "") {
			continue
		}
		if err := o.Set(v.spec.Name, v.text()); err != nil {
			return o, err
		}
	}
	return o, o.Settle(given)
}

// CheckSet checks the options o against the set s, once it is
// read: the mode against the set's columns (evaluate.NotionSet.Resolve),
// the KS r against K (evaluate.Options.CheckK).
func CheckSet(o evaluate.Options, s *data.Set) error {
	if _, _, err := o.Mode.Resolve(s); err != nil {
		return err
	}
	return o.CheckK(s.K)
}

func optionError(option, format string, args ...any) error {
	return &evaluate.OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// BandwidthNotion parses the mode of a bandwidth selection
// (bandwidth.Select, calib bandwidth --mode), which must name one
// notion (see evaluate.NotionSet); "" means canonical, or binary for
// one-column input. With s nil (before the data is read) it checks the
// names and their number only, "all" then counting as one.
func BandwidthNotion(mode string, s *data.Set) (kde.Notion, error) {
	if mode == "" {
		if s != nil && s.Binary {
			return kde.Binary, nil
		}
		return kde.Canonical, nil
	}
	var set evaluate.NotionSet
	if err := set.UnmarshalText([]byte(mode)); err != nil {
		return "", err
	}
	ns, _, err := set.Resolve(s)
	if err != nil {
		return "", err
	}
	if len(ns) != 1 {
		return "", optionError("mode", "mode: bandwidth takes one notion, got %d", len(ns))
	}
	return ns[0], nil
}

// FlagMessage is the message of err for a command line: an
// evaluate.OptionError as its option's flag and the reason, without the
// library's "bad options" ("--ci: bootstrap intervals need ...", or
// "--p: ..." where the reason begins with the option's name); any other
// error's own text.
func FlagMessage(err error) string {
	var oe *evaluate.OptionError
	if !errors.As(err, &oe) {
		return err.Error()
	}
	msg := oe.Err.Error()
	if oe.Option != "" && !strings.HasPrefix(msg, oe.Option) {
		return "--" + oe.Option + ": " + msg
	}
	return "--" + msg
}
