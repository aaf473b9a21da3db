package optionspec_test

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/calib-dev/calib/optionspec"
)

// opts is a small options struct for the tests.
type opts struct {
	N     int
	X     float64
	B     bool
	S     string
	Names []string
}

var specs = []optionspec.Spec[opts]{
	{Option: optionspec.Option{Name: "n-items", Kind: optionspec.Int, Default: "3", ReadBy: []string{"a"}},
		Set: optionspec.SetInt(1, 10, "an integer in [1, 10]", func(o *opts) *int { return &o.N })},
	{Option: optionspec.Option{Name: "x", Kind: optionspec.Float, Default: "0.5"},
		Set: optionspec.SetFloat(func(x float64) bool { return x > 0 }, "a finite number > 0", func(o *opts) *float64 { return &o.X })},
	{Option: optionspec.Option{Name: "b", Kind: optionspec.Bool, Default: "false", ReadBy: []string{"b", "c"}},
		Set: optionspec.SetBool(func(o *opts) *bool { return &o.B })},
	{Option: optionspec.Option{Name: "s", Kind: optionspec.Text},
		Set: optionspec.SetOneOf("want up or down", []string{"up", "down"}, func(o *opts) *string { return &o.S })},
	{Option: optionspec.Option{Name: "names", Kind: optionspec.Text},
		Set: func(o *opts, text string) error { o.Names = strings.Split(text, ","); return nil }},
}

// TestParse: defaults where absent, "_" for "-", each kind's range, and
// the refusals naming the option.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		text map[string]string
		want opts
		err  string // the message's start; "" for none
	}{
		{nil, opts{N: 3, X: 0.5}, ""},
		{map[string]string{"n_items": "7", "x": "2", "b": "true", "s": "up"}, opts{N: 7, X: 2, B: true, S: "up"}, ""},
		{map[string]string{"names": "a, b"}, opts{N: 3, X: 0.5, Names: []string{"a", " b"}}, ""},
		{map[string]string{"n-items": "0"}, opts{}, `n-items "0": want an integer in [1, 10]`},
		{map[string]string{"n-items": "1e3"}, opts{}, `n-items "1e3": want an integer in [1, 10]`},
		{map[string]string{"x": "NaN"}, opts{}, `x "NaN": want a finite number > 0`},
		{map[string]string{"x": "-1"}, opts{}, `x "-1": want a finite number > 0`},
		{map[string]string{"b": "yes"}, opts{}, `b "yes": want true or false`},
		{map[string]string{"s": "left"}, opts{}, `s "left": want up or down`},
		{map[string]string{"s": ""}, opts{}, `s "": names nothing`},
		{map[string]string{"names": "a,,b"}, opts{}, `names "a,,b": an empty name between commas`},
		{map[string]string{"names": "a,a"}, opts{}, `names "a,a": a given twice`},
		{map[string]string{"n-items": "2", "n_items": "3"}, opts{}, `n-items given twice (as "n-items" and "n_items")`},
		{map[string]string{"zz": "1"}, opts{}, `unknown option "zz" (valid: n-items, x, b, s, names)`},
	} {
		var o opts
		_, err := optionspec.Parse(specs, &o, c.text)
		if c.err == "" {
			if err != nil || fmt.Sprint(o) != fmt.Sprint(c.want) {
				t.Errorf("Parse(%v) = %+v, %v; want %+v", c.text, o, err, c.want)
			}
			continue
		}
		var oe *optionspec.Error
		if err == nil || !strings.HasPrefix(err.Error(), c.err) || !errors.As(err, &oe) {
			t.Errorf("Parse(%v): error %v, want an *Error starting %q", c.text, err, c.err)
		}
	}
}

// TestUnread: an option given is refused when none of its readers is
// chosen, in name order; not given, or read, it passes.
func TestUnread(t *testing.T) {
	o := optionspec.Options(specs)
	if err := optionspec.Unread(o, optionspec.Given{"n-items": true, "b": true}, "--kind", []string{"z"}); err == nil ||
		err.Error() != "b applies to --kind b, c, not z" {
		t.Errorf("Unread: %v, want b refused first (name order)", err)
	}
	if err := optionspec.Unread(o, optionspec.Given{"n-items": true, "x": true}, "--kind", []string{"a"}); err != nil {
		t.Errorf("Unread with a reader chosen: %v", err)
	}
	if err := optionspec.Unread(o, optionspec.Given{}, "--kind", []string{"z"}); err != nil {
		t.Errorf("Unread of nothing given: %v", err)
	}
}

// TestRegister: the flags have the options' kinds and defaults, and
// Given returns the text of those changed, which Parse reads back.
func TestRegister(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := optionspec.Register(fs, optionspec.Options(specs))
	if err := fs.Parse([]string{"-n-items", "4", "-b", "-x", "0.25"}); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{"n-items": "3", "x": "0.5", "b": "false", "s": ""} {
		if got := fs.Lookup(name).DefValue; got != def {
			t.Errorf("flag %s default %q, want %q", name, got, def)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	text := f.Given(func(name string) bool { return set[name] })
	if fmt.Sprint(text) != "map[b:true n-items:4 x:0.25]" {
		t.Errorf("Given = %v", text)
	}
	var o opts
	if _, err := optionspec.Parse(specs, &o, text); err != nil || o.N != 4 || !o.B || o.X != 0.25 {
		t.Errorf("Parse(Given) = %+v, %v", o, err)
	}
}

// TestFlagMessage: the command line's form of an Error.
func TestFlagMessage(t *testing.T) {
	for err, want := range map[error]string{
		optionspec.Errorf("x", `x "0": want more`):    `--x "0": want more`,
		optionspec.Errorf("x", "give it with --y"):    "--x: give it with --y",
		fmt.Errorf("wrapped: %w", errors.New("oops")): "wrapped: oops",
	} {
		if got := optionspec.FlagMessage(err); got != want {
			t.Errorf("FlagMessage(%v) = %q, want %q", err, got, want)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[optionspec.Kind]string{optionspec.Text: "string", optionspec.Bool: "bool", optionspec.Int: "int", optionspec.Uint64: "uint64", optionspec.Float: "float64"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
}

// ExampleParse parses the options a front end was given by name.
func ExampleParse() {
	type retry struct{ Tries int }
	specs := []optionspec.Spec[retry]{{
		Option: optionspec.Option{Name: "tries", Kind: optionspec.Int, Default: "3", Usage: "attempts"},
		Set:    optionspec.SetInt(1, 10, "an integer in [1, 10]", func(o *retry) *int { return &o.Tries }),
	}}
	var o retry
	_, err := optionspec.Parse(specs, &o, nil)
	fmt.Println(o.Tries, err)
	_, err = optionspec.Parse(specs, &o, map[string]string{"tries": "0"})
	fmt.Println(optionspec.FlagMessage(err))
	// Output:
	// 3 <nil>
	// --tries "0": want an integer in [1, 10]
}
