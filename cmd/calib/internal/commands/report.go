package commands

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
)

// figureFlags are the figure flags shared by report, plot and demo: they
// map onto report.FigureOptions, o, and the text of the names and lists,
// text (whose --methods report and plot register).
type figureFlags struct {
	o    report.FigureOptions
	text report.Text
}

func (f *figureFlags) register(cmd *Command, withBins bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.text.Classes, "classes", "", "simplex view: the two classes `a,b` shown (the others merge into \"other\"); default: the pair the model confuses most")
	fs.IntVar(&f.o.PerClass, "per-class", report.DefaultPerClass, "reliability diagrams of the first `N` classes (0: none)")
	if withBins {
		fs.IntVar(&f.o.Bins.Bins, "bins", metric.DefaultBins, "bins of the reliability diagrams")
		fs.StringVar(&f.text.Binning, "binning", "equal_width", "bin edges of the reliability diagrams: equal_width or equal_mass")
	}
}

// options returns o with the figure flags and the methods, checked before
// any data is read: their syntax by report.Text.Parse, the rest by
// report.Options.Validate (report.Build checks the classes against K).
// Without --binning (report, demo) the figures take the bins of the
// metric flags.
func (f *figureFlags) options(o report.Options) (report.Options, error) {
	if o.Figures = f.o; o.Figures.PerClass == 0 {
		o.Figures.PerClass = -1 // --per-class 0: none
	}
	if err := f.text.Parse(&o); err != nil {
		return o, optionError("", err)
	}
	if err := o.Validate(); err != nil {
		return o, inputError{err}
	}
	return o, nil
}

// reportFlags are the flags of report and demo that become report.Options.
type reportFlags struct {
	ef        evalFlags
	ff        figureFlags
	grid, out string
	tests     bool
	mapping   recal.Calibrator // the map of --calibrator, read by options
}

func (f *reportFlags) register(cmd *Command, outUsage string) {
	f.ef.register(cmd, evalflag.InMemory)
	f.ff.register(cmd, false)
	// The report's metric defaults: every metric, ECE^KDE canonical and
	// top-label, bootstrap intervals (report.Options' zero value).
	fs := cmd.Flags()
	f.ef.defaults = report.ReportMetrics()
	for name, def := range map[string]string{"mode": "canonical,top_label", "ci": "true"} {
		fs.Lookup(name).DefValue = def
		_ = fs.Lookup(name).Value.Set(def) // the variable, not the flag: Changed stays false
	}
	fs.Lookup("ci").Usage = "bootstrap intervals for every metric without an interval of its own (default on; --ci=false turns them off; ece_variational keeps its cross-fit interval)"
	fs.Lookup("seed").Usage = "seed of the bootstrap, of ece_witness's cross-fitting splits, of the recalibration's folds and of the figures (same seed, same report; 0 means 1)"
	fs.StringVar(&f.ff.text.Methods, "methods", "", "recalibration methods, comma-separated (default: all)")
	fs.StringVar(&f.grid, "grid", "default", "cross-validation grid of the ODIR methods: default or full")
	fs.BoolVar(&f.tests, "tests", true, "the section \"Is it calibrated?\": the default tests of calib test (--tests=false leaves it out)")
	fs.StringVarP(&f.out, "output", "o", "", outUsage)
	fs.Lookup("json").Usage = "also print the table of metrics as one JSON object on stdout (as calib eval --json)"
	fs.Lookup("calibrator").Usage = "apply the map `MAP.json` (from calib fit) to the predictions (and the validation set) before every number and figure"
}

// options turns the flags into report.Options, checked before any data is
// read. The output file must be given and writable; the map of
// --calibrator is read now (f.mapping), before the data.
func (f *reportFlags) options(fs *pflag.FlagSet) (report.Options, error) {
	eo, err := f.ef.options()
	if err != nil {
		return report.Options{}, err
	}
	o, err := f.ff.options(report.Options{Eval: eo, NoIntervals: !eo.CI, NoTests: !f.tests, Grid: f.grid, Seed: eo.Seed, Workers: eo.Workers})
	if err != nil {
		return o, err
	}
	if err := refuseUnread(fs, gridReaders, "--methods", methodNames(o.Methods)); err != nil {
		return o, err
	}
	if err := requireOutput(f.out, "report.html", "html", "htm"); err != nil {
		return o, err
	}
	if f.ef.calibrator != "" {
		if f.mapping, err = recal.LoadFile(f.ef.calibrator); err != nil {
			return o, err
		}
	}
	return o, nil
}

// write builds the report of test and val (may be nil) with progress on
// stderr and prov as its provenance, after applying the map of
// --calibrator to both sets (the report is then the calibrated
// predictions') and checking the metric flags against the data (--ks-r
// against K), and writes it to -o (atomically).
func (f *reportFlags) write(cmd *Command, test, val *data.Set, o report.Options, prov *data.Provenance) (*report.Document, error) {
	if f.mapping != nil {
		var err error
		if test, err = recal.Apply(f.mapping, test); err != nil {
			return nil, err
		}
		if val != nil {
			if val, err = recal.Apply(f.mapping, val); err != nil {
				return nil, err
			}
		}
		prov.Mapping = &data.Mapping{File: f.ef.calibrator, Method: f.mapping.Info().Method}
		o.Facts = append(o.Facts, report.Fact{Name: "calibrated by", Value: prov.Mapping.String() + " (applied to the test and validation predictions before every number and figure)"})
	}
	eo, err := f.ef.options()
	if err == nil {
		err = f.ef.checkSet(eo, test)
	}
	if err != nil {
		return nil, err
	}
	if f.ff.text.Classes != "" && test.K < 3 {
		return nil, usageErrorf("--classes %s: the simplex view needs K >= 3 classes, the predictions have K = %d", f.ff.text.Classes, test.K)
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.ef.progress)
	o.Progress, o.Provenance = ui, prov
	o.Facts = append(o.Facts, report.Fact{Name: "made by", Value: "calib " + prov.Version + " (" + prov.Command + ")"})
	doc, err := report.Build(cmd.Context(), test, val, o)
	ui.wait()
	if err != nil {
		return nil, err
	}
	if f.mapping != nil {
		doc.Evaluation.Calibrated = prov.Mapping.String()
	}
	return doc, doc.SaveHTML(f.out)
}

// warnNotDrawn prints the figures that could not be drawn.
func warnNotDrawn(w io.Writer, doc *report.Document) {
	for _, err := range doc.Warnings {
		fmt.Fprintf(w, "warning: not drawn: %s\n", OneLine(err.Error()))
	}
}

func newReportCmd() *Command {
	var in inputFlags
	var rf reportFlags
	var val, valLabels string
	cmd := command("report PRED -o report.html", "Write one self-contained HTML report: metrics with intervals, every figure, and the recalibration comparison", exactArgs(1), func(cmd *Command, args []string) error {
		o, err := rf.options(cmd.Flags())
		if err != nil {
			return err
		}
		if val == "" {
			for _, flag := range []string{"methods", "grid", "val-labels", "val-weights"} {
				if cmd.Flags().Changed(flag) {
					return usageErrorf("--%s applies to the recalibration comparison, which needs --val", flag)
				}
			}
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		vs, err := in.loadVal(cmd, val, valLabels, s.K)
		if err != nil {
			return err
		}
		doc, err := rf.write(cmd, s, vs, o, newProvenance(cmd, args).AddInput("test", s, in.o.Labels).AddInput("val", vs, valLabels))
		if err != nil {
			return err
		}
		warnNotDrawn(cmd.ErrOrStderr(), doc)
		if rf.ef.json { // the evaluation's JSON, as calib eval --json prints it
			fmt.Fprintf(cmd.ErrOrStderr(), "report written to %s\n", rf.out)
			return evaluate.WriteJSON(cmd.OutOrStdout(), doc.Evaluation)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", rf.out)
		return nil
	})
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), true)
	rf.register(cmd, "the HTML `FILE` to write")
	fs := cmd.Flags()
	fs.StringVar(&val, "val", "", "validation predictions `FILE`: fit every recalibration method on it and compare on PRED")
	fs.StringVar(&valLabels, "val-labels", "", "validation labels `FILE` (if not in the validation file)")
	fs.Lookup("methods").Usage = "recalibration methods of the comparison, comma-separated (default: all)"
	return cmd
}
