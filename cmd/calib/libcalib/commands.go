//go:build cgo

package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/cmd/calib/internal/inputerr"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/optionspec"
	"github.com/calib-dev/calib/recal"
)

// inputSpecs are the options of every command that say how to read the
// arrays: the command line's input flags that name no file.
var inputSpecs = []optionspec.Spec[data.Options]{
	{Option: optionspec.Option{Name: "logits", Kind: optionspec.Bool, Default: "false"},
		Set: optionspec.SetBool(func(o *data.Options) *bool { return &o.Logits })},
	{Option: optionspec.Option{Name: "renormalize", Kind: optionspec.Bool, Default: "false"},
		Set: optionspec.SetBool(func(o *data.Options) *bool { return &o.Renormalize })},
	{Option: optionspec.Option{Name: "tolerance", Kind: optionspec.Float, Default: strconv.FormatFloat(data.DefaultTolerance, 'g', -1, 64)},
		Set: func(o *data.Options, text string) error {
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || !(x > 0 && x < 1) {
				return optionspec.Errorf("tolerance", "tolerance %q: want a number in (0, 1)", text)
			}
			o.Tolerance = x
			return nil
		}},
}

// commandRequest is an options object decoded for a command: how to read
// the arrays, and the command's own options as text, keyed by name.
type commandRequest struct {
	input data.Options
	own   map[string]string // the command's options given
	text  map[string]string // every key given (the provenance's options)
}

// decodeCommand splits set into the input options (inputSpecs, parsed,
// with their defaults) and the command's own, those isOwn reports (left
// as text for its package's Parse function); any other key is not an
// option of the command. tolerance and renormalize are refused with
// logits.
func decodeCommand(set []setting, isOwn func(name string) bool) (commandRequest, error) {
	r := commandRequest{own: map[string]string{}, text: map[string]string{}}
	input := map[string]string{}
	for _, s := range set {
		r.text[s.Name] = s.Value
		switch {
		case isOwn(s.Name):
			r.own[s.Name] = s.Value
		case slices.ContainsFunc(inputSpecs, func(o optionspec.Spec[data.Options]) bool { return o.Name == s.Name }):
			input[s.Name] = s.Value
		default:
			return r, fmt.Errorf("unknown flag: --%s", s.Name)
		}
	}
	if _, err := optionspec.Parse(inputSpecs, &r.input, input); err != nil {
		return r, fmt.Errorf("%s", optionspec.FlagMessage(err))
	}
	if r.input.Logits {
		for _, k := range []string{"renormalize", "tolerance"} {
			if _, given := input[k]; given {
				return r, fmt.Errorf("--%s applies to probabilities (their row sums), not to --logits", k)
			}
		}
	}
	return r, nil
}

// specNamed returns the function that reports whether a name is one of
// opts's.
func specNamed(opts []optionspec.Option) func(name string) bool {
	return func(name string) bool {
		return slices.ContainsFunc(opts, func(o optionspec.Option) bool { return o.Name == name })
	}
}

// message is err as the command line says it (inputerr.Message), for
// code 2.
func message(err error) error { return fmt.Errorf("%s", inputerr.Message(err)) }

// runTest tests the arrays a for calibration as calib test --json does
// a file holding them.
func runTest(ctx context.Context, set []setting, name string, a data.Arrays) (string, int, error) {
	r, err := decodeCommand(set, specNamed(calibtest.OptionSpecs()))
	if err != nil {
		return "", codeInput, err
	}
	o, err := calibtest.ParseOptions(r.own)
	if err != nil {
		return "", codeInput, message(err)
	}
	s, err := load(a, name, r.input)
	if err != nil {
		return "", codeInput, err
	}
	res, err := calibtest.Run(ctx, s.Probs, s.Labels, s.K, s.Weights, o)
	if code, err := failure(ctx, err); err != nil {
		return "", code, err
	}
	var out strings.Builder
	if err := res.WriteJSON(&out); err != nil {
		return "", codeFailure, err
	}
	return out.String(), codeOK, nil
}

// runBandwidth selects the bandwidth of one notion on the arrays a as calib
// bandwidth --json does.
func runBandwidth(ctx context.Context, set []setting, name string, a data.Arrays) (string, int, error) {
	r, err := decodeCommand(set, specNamed(bandwidth.OptionSpecs()))
	if err != nil {
		return "", codeInput, err
	}
	o, err := bandwidth.ParseOptions(r.own)
	if err == nil {
		_, err = evalflag.BandwidthNotion(o.Mode, nil)
	}
	if err != nil {
		return "", codeInput, message(err)
	}
	s, err := load(a, name, r.input)
	if err != nil {
		return "", codeInput, err
	}
	notion, err := evalflag.BandwidthNotion(o.Mode, s)
	if err != nil {
		return "", codeInput, message(err)
	}
	rep, err := bandwidth.Select(ctx, s, notion, o.BandwidthOptions)
	if code, err := failure(ctx, err); err != nil {
		return "", code, err
	}
	rep.Provenance = provenance("calib bandwidth", name, r.text, nil).AddInput("", s, "")
	rep.Provenance.Options["mode"] = notion.String()
	var out strings.Builder
	if err := rep.WriteJSON(&out); err != nil {
		return "", codeFailure, err
	}
	return out.String(), codeOK, nil
}

// runFit fits a map on the arrays a as calib fit -o - does, and returns
// the map.
func runFit(ctx context.Context, set []setting, name string, a data.Arrays) (string, int, error) {
	r, err := decodeCommand(set, specNamed(recal.FitOptionSpecs()))
	if err != nil {
		return "", codeInput, err
	}
	method, o, err := recal.ParseFit(r.own)
	if err != nil {
		return "", codeInput, message(err)
	}
	s, err := load(a, name, r.input)
	if err != nil {
		return "", codeInput, err
	}
	if method.NeedsLogits() && s.Logits == nil {
		return inputError("--method %s needs logits (--logits)", method)
	}
	c, err := recal.Fit(ctx, method, s, o)
	if code, err := failure(ctx, err); err != nil {
		return "", code, fmt.Errorf("%s: %w", name, err)
	}
	seed := o.Linear.Seed
	if err := recal.Record(c, provenance("calib fit", name, r.text, &seed).AddInput("val", s, "")); err != nil {
		return "", codeFailure, err
	}
	var out strings.Builder
	if err := recal.Save(&out, c); err != nil {
		return "", codeFailure, err
	}
	return out.String(), codeOK, nil
}

// load reads the arrays a, named name, with the input options o, and
// returns the set with its weights in their normalised form (the same
// answer for any common factor), as the command line loads a file.
func load(a data.Arrays, name string, o data.Options) (*data.Set, error) {
	s, err := a.Load(name, o)
	if err != nil {
		return nil, err
	}
	return s.ScaledWeights(), nil
}

// provenance records calib's version, the command, the arrays' name, the
// options given and the seed (nil: none).
func provenance(command, name string, options map[string]string, seed *uint64) *data.Provenance {
	return &data.Provenance{Version: data.Version(), Command: command, Args: []string{name}, Options: options, Seed: seed}
}
