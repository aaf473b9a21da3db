//go:build cgo

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/calib-dev/calib/cmd/calib/internal/inputerr"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
)

// fileKeys are calib eval's options of a streamed evaluation of files,
// which neither an array nor an accumulator's batches have.
var fileKeys = []string{"stream", "rows"}

// evalRequest is an options object decoded for calib eval: the options
// of the evaluation (evaluate.StreamOptions; an evaluation in memory
// reads its Options) and of reading the arrays.
type evalRequest struct {
	eval  evaluate.StreamOptions
	input data.Options
	text  map[string]string // every key given, as text (the provenance's options)
}

// decodeEval decodes set, calib eval's options (each key an option of
// evaluate.OptionSpecs, of a file stream or of inputSpecs), for the arrays
// name (stream: an accumulator's batches): evaluate.ParseOptions (or
// ParseStreamOptions) reads the evaluation's, each checked by its option,
// then the options together. Its errors are the command line's messages
// ("--bins \"0\": want an integer in [1, 10000]").
func decodeEval(set []setting, name string, stream bool) (evalRequest, error) {
	cr, err := decodeCommand(set, func(name string) bool {
		_, ok := evaluate.LookupOption(name)
		return ok || slices.Contains(fileKeys, name)
	})
	r := evalRequest{input: cr.input, text: cr.text}
	if err != nil {
		return r, err
	}
	opts := map[string]string{}
	for _, s := range set {
		spec, isOption := evaluate.LookupOption(s.Name)
		switch {
		case slices.Contains(fileKeys, s.Name) && stream:
			return r, fmt.Errorf("--%s does not apply to batches added in memory", s.Name)
		case slices.Contains(fileKeys, s.Name) && (s.Name != "stream" || s.Value != "false"),
			isOption && spec.StreamOnly && !stream:
			return r, fmt.Errorf("--%s applies to a streamed evaluation of files; %s is an array in memory, evaluated whole", s.Name, name)
		case isOption:
			opts[s.Name] = s.Value
		}
	}
	if stream {
		r.eval, err = evaluate.ParseStreamOptions(opts)
	} else {
		r.eval.Options, err = evaluate.ParseOptions(opts, nil)
	}
	return r, flagError(err)
}

// flagError is err with the command line's message of an option error
// (evalflag.FlagMessage); nil for nil.
func flagError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s", evalflag.FlagMessage(err))
}

// evalOptionTypes are the options calib_run's eval takes (for the
// registry): every option of evaluate's, the input's and the files'.
func evalOptionTypes() map[string]option {
	opts := map[string]option{}
	for _, spec := range evaluate.OptionSpecs() {
		opts[spec.Name] = option{spec.Kind.String(), spec.Default}
	}
	for _, k := range inputSpecs {
		opts[k.Name] = option{k.Kind.String(), k.Default}
	}
	opts["stream"], opts["rows"] = option{"bool", "false"}, option{"int", "0"}
	return opts
}

// evalReaders names the options of calib eval that some metrics only
// read, and those metrics (evaluate.Option.Metrics), for the registry.
func evalReaders() map[string][]string {
	readers := map[string][]string{}
	for _, spec := range evaluate.OptionSpecs() {
		for _, m := range spec.Metrics {
			readers[spec.Name] = append(readers[spec.Name], string(m))
		}
	}
	return readers
}

// runEval evaluates the arrays a, named name, as calib eval does a file
// holding them: the options decoded (decodeEval), the arrays read and
// checked, the options checked against them, then evaluate.Evaluate; the
// JSON is what calib eval --json prints.
func runEval(ctx context.Context, set []setting, name string, a data.Arrays) (string, int, error) {
	start := time.Now()
	r, err := decodeEval(set, name, false)
	if err != nil {
		return "", codeInput, err
	}
	s, err := a.Load(name, r.input)
	if err != nil {
		return "", codeInput, err
	}
	s = s.ScaledWeights()
	o := r.eval.Options
	if err := evalflag.CheckSet(o, s); err != nil {
		return "", codeInput, flagError(err)
	}
	prov := &data.Provenance{Version: data.Version(), Command: "calib eval", Args: []string{name}, Options: r.text}
	seed := o.Seed
	if seed == 0 {
		seed = evaluate.DefaultSeed
	}
	prov.Seed = &seed
	prov.AddInput("", s, "")
	ev, err := evaluate.Evaluate(ctx, s, o)
	if code, err := failure(ctx, err); err != nil {
		return "", code, err
	}
	ev.Seconds, ev.Provenance, ev.Input = time.Since(start).Seconds(), prov, s.Kind()
	var out strings.Builder
	if err := evaluate.WriteJSON(&out, ev); err != nil {
		return "", codeFailure, err
	}
	return out.String(), codeOK, nil
}

// failure returns the code of err, a library call's error in the context
// ctx (codeOK for nil): cancelled, the input's, or calib's own failure.
func failure(ctx context.Context, err error) (int, error) {
	switch {
	case ctx.Err() != nil:
		return codeCancelled, fmt.Errorf("interrupted: %w", ctx.Err())
	case err == nil:
		return codeOK, nil
	case inputerr.Is(err):
		return codeInput, message(err)
	}
	return codeFailure, err
}
