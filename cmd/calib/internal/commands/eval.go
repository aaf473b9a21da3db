package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/evaluate/evaltext"
	"github.com/calib-dev/calib/recal"
)

// evalFlags are the metric flags of eval, report and demo: the options of
// evaluate (evalflag.Register, from evaluate.OptionSpecs), read back into
// evaluate.Options once.
type evalFlags struct {
	flags          *evalflag.Flags
	fs             *pflag.FlagSet
	defaults       evaluate.MetricSet // what Metrics nil stands for (nil: evaluate.DefaultMetrics)
	calibrator     string
	json, progress bool

	// The options parsed from the flags (options), once.
	parsed        bool
	parsedOptions evaluate.Options
	parseErr      error
}

// register registers the flags on cmd; which says whether the command
// streams (evalflag.Eval) or evaluates in memory only (InMemory).
func (f *evalFlags) register(cmd *Command, which evalflag.Command) {
	fs := cmd.Flags()
	f.fs = fs
	f.flags = evalflag.Register(fs, which)
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.progress, "progress", true, "show progress bars on stderr when it is a terminal")
	fs.StringVar(&f.calibrator, "calibrator", "", "apply the map `MAP.json` (from calib fit) before measuring")
}

// given reports whether the flag name was set; the stream's own flags
// count in a streamed evaluation only (streamOnly), and are refused for
// one in memory before.
func (f *evalFlags) given(name string) bool { return f.fs.Changed(name) }

func newEvalCmd() *Command {
	var in inputFlags
	var ef evalFlags
	var sf streamFlags
	cmd := command("eval PRED", "Measure the calibration of a prediction file (ECE^KDE, binned ECE, KS, MMCE, proper scores)", exactArgs(1), func(cmd *Command, args []string) error {
		var out *evaluate.Evaluation
		var stream bool
		var names []string
		var err error
		// The options, before the file is looked at: the stream's with
		// --stream, else the in-memory evaluation's (the stream's own
		// flags are left to decide, which says to add --stream).
		if sf.on {
			_, err = ef.streamOptions()
		} else if _, err = ef.options(); err == nil {
			if err = ef.flags.CheckStreamOnly(ef.given); err != nil {
				err = optionError("", err)
			}
		}
		if err != nil {
			return err
		}
		stream, names, err = sf.decide(cmd, args[0])
		if err == nil && stream && !sf.on { // streamed for its size or shards
			_, err = ef.streamOptions()
		}
		if err != nil {
			return err
		}
		switch {
		case stream:
			out, err = ef.stream(cmd, &in, &sf, args, names)
		case names != nil: // a glob or directory of one file
			out, err = ef.evaluate(cmd, &in, names)
		default:
			out, err = ef.evaluate(cmd, &in, args)
		}
		var de *data.Error
		if err != nil && !stream && names != nil && errors.As(err, &de) && de.File != args[0] {
			// Say why that file was read: PRED named a directory or glob.
			err = fmt.Errorf("%w (read as a prediction file because %s names it)", err, args[0])
		}
		if err != nil {
			return err
		}
		if ef.json {
			return evaluate.WriteJSON(cmd.OutOrStdout(), out)
		}
		return evaltext.WriteText(cmd.OutOrStdout(), out)
	})
	registerEval(cmd, &in, &ef, &sf)
	return cmd
}

// registerEval registers calib eval's flags on cmd: the input's, the
// metrics' and the stream's (eval itself and the accumulators'
// StreamOptions).
func registerEval(cmd *Command, in *inputFlags, ef *evalFlags, sf *streamFlags) {
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	ef.register(cmd, evalflag.Eval)
	sf.register(cmd.Flags())
}

// evaluate reads the map of --calibrator (before the data), loads the set
// args[0], applies the map and evaluates the set with progress on stderr;
// Seconds covers it all, the provenance records the input and the map.
func (f *evalFlags) evaluate(cmd *Command, in *inputFlags, args []string) (*evaluate.Evaluation, error) {
	start, prov := time.Now(), newProvenance(cmd, args)
	var c recal.Calibrator
	var err error
	if f.calibrator != "" {
		if c, err = recal.LoadFile(f.calibrator); err != nil {
			return nil, err
		}
	}
	s, err := in.load(cmd, args[0])
	if err != nil {
		return nil, err
	}
	kind := s.Kind()
	prov.AddInput("", s, in.o.Labels)
	if c != nil {
		if s, err = recal.Apply(c, s); err != nil {
			return nil, err
		}
		prov.Mapping = &data.Mapping{File: f.calibrator, Method: c.Info().Method}
	}
	o, err := f.options()
	if err == nil {
		err = f.checkSet(o, s)
	}
	if err != nil {
		return nil, err
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.progress)
	o.Progress = ui
	out, err := evaluate.Evaluate(cmd.Context(), s, o)
	ui.wait()
	if err != nil {
		return nil, err
	}
	out.Seconds, out.Provenance, out.Input = time.Since(start).Seconds(), prov, kind
	if c != nil {
		out.Calibrated = prov.Mapping.String()
	}
	return out, nil
}

// options parses the metric flags into evaluate.Options, once, before
// the data is read (evalflag.Flags.Options: each option's range, the
// rules between them, the options nothing would read): later calls return
// the same options, or the same error. What depends on the data (--ks-r
// against K, --mode binary against the columns) is checkSet's.
func (f *evalFlags) options() (evaluate.Options, error) {
	if !f.parsed {
		f.parsed = true
		f.parsedOptions, f.parseErr = f.flags.Options(f.given, f.defaults)
		if f.parseErr != nil {
			f.parseErr = optionError("", f.parseErr)
		}
	}
	return f.parsedOptions, f.parseErr
}

// checkSet checks the parsed options o against the set s once it is read
// (evalflag.CheckSet).
func (f *evalFlags) checkSet(o evaluate.Options, s *data.Set) error {
	if err := evalflag.CheckSet(o, s); err != nil {
		return optionError("", err)
	}
	return nil
}
