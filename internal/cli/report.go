package cli

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
)

// figureFlags are the figure flags shared by report, plot and demo.
type figureFlags struct {
	classes  string // "a,b" for the simplex view
	perClass int    // per-class reliability diagrams
	bins     int
	binning  string
}

func (f *figureFlags) register(cmd *cobra.Command, withBins bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.classes, "classes", "", "simplex view: the two classes `a,b` shown (the others merge into \"other\"); default: the pair the model confuses most")
	fs.IntVar(&f.perClass, "per-class", report.DefaultPerClass, "reliability diagrams of the first `N` classes (0: none)")
	if withBins {
		fs.IntVar(&f.bins, "bins", metric.DefaultBins, "bins of the reliability diagrams")
		fs.StringVar(&f.binning, "binning", "equal_width", "bin edges of the reliability diagrams: equal_width or equal_mass")
	}
}

// options parses the figure flags: the syntax of --classes and --binning
// (the ranges are checked by flagRules; report.Options.Validate checks
// the rest, and report.Build the classes against K). Without --binning
// (report, demo) the figures take the bins of the metric flags.
func (f *figureFlags) options() (report.FigureOptions, error) {
	o := report.FigureOptions{PerClass: f.perClass}
	if f.perClass == 0 {
		o.PerClass = -1 // --per-class 0: none
	}
	if f.binning != "" {
		b, err := metric.ParseBinning(f.binning)
		if err != nil {
			return o, usageErrorf("--binning: %v", err)
		}
		o.Bins = metric.BinOptions{Bins: f.bins, Binning: b}
	}
	if f.classes == "" {
		return o, nil
	}
	parts := strings.Split(f.classes, ",")
	if len(parts) != 2 {
		return o, usageErrorf("--classes %q: want two classes a,b", f.classes)
	}
	for _, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return o, usageErrorf("--classes %q: classes are integers >= 0", f.classes)
		}
		o.Classes = append(o.Classes, v)
	}
	if o.Classes[0] == o.Classes[1] {
		return o, usageErrorf("--classes %q: need two different classes", f.classes)
	}
	return o, nil
}

// reportFlags are the flags of report and demo that become report.Options.
type reportFlags struct {
	ef            evalFlags
	ff            figureFlags
	methods, grid string
	out           string
}

func (f *reportFlags) register(cmd *cobra.Command, outUsage string) {
	f.ef.register(cmd)
	f.ff.register(cmd, false)
	// The report's metric defaults: every metric, ECE^KDE canonical and
	// top-label, bootstrap intervals (report.Options' zero value).
	fs := cmd.Flags()
	fs.Lookup("mode").DefValue, f.ef.mode = "canonical,top_label", "canonical,top_label"
	fs.Lookup("ci").DefValue, f.ef.ci = "true", true
	fs.Lookup("ci").Usage = "bootstrap intervals for every metric (default on; --ci=false turns them off)"
	fs.Lookup("seed").Usage = "seed of the bootstrap, of ece_witness's cross-fitting splits, of the recalibration's folds and of the figures (same seed, same report; 0 means 1)"
	fs.StringVar(&f.methods, "methods", "", "recalibration methods, comma-separated (default: all)")
	fs.StringVar(&f.grid, "grid", "default", "cross-validation grid of the ODIR methods: default or full")
	fs.StringVarP(&f.out, "output", "o", "", outUsage)
}

// options turns the flags into report.Options, checked before any data is
// read: the flag syntax here, the rest by report.Options.Validate. The
// output file must be given and writable.
func (f *reportFlags) options() (report.Options, error) {
	if f.out == "" {
		return report.Options{}, usageErrorf("-o report.html is required")
	}
	if err := checkOutput("-o", f.out, "html", "htm"); err != nil {
		return report.Options{}, err
	}
	eo, err := parseEvalFlags(f.ef, nil)
	if err != nil {
		return report.Options{}, err
	}
	fo, err := f.ff.options()
	if err != nil {
		return report.Options{}, err
	}
	ms, err := parseMethods(f.methods)
	if err != nil {
		return report.Options{}, err
	}
	o := report.Options{Eval: eo, NoIntervals: !f.ef.ci, Grid: f.grid, Figures: fo, Seed: f.ef.seed, Workers: f.ef.workers}
	for _, m := range ms {
		o.Methods = append(o.Methods, recal.Method(m))
	}
	if err := o.Validate(); err != nil {
		return o, inputError{err}
	}
	return o, nil
}

// write builds the report of test and val (may be nil) with progress on
// stderr and prov as its provenance, after checking the metric flags
// against the data (--ks-r against K), and writes it to -o (atomically).
func (f *reportFlags) write(cmd *cobra.Command, test, val *data.Set, o report.Options, prov *provenance) (*report.Document, error) {
	if _, err := parseEvalFlags(f.ef, test); err != nil {
		return nil, err
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), f.ef.progress)
	if ui != nil {
		o.Progress = ui
	}
	o.Provenance = prov
	o.Facts = []report.Fact{{Name: "made by", Value: "calib " + prov.Version + " (" + prov.Command + ")"}}
	doc, err := report.Build(cmd.Context(), test, val, o)
	ui.wait()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := doc.WriteHTML(&buf); err != nil {
		return nil, err
	}
	return doc, writeAtomic(f.out, bytesWriter(buf.Bytes()))
}

// warnNotDrawn prints the figures that could not be drawn.
func warnNotDrawn(w io.Writer, doc *report.Document) {
	for _, err := range doc.Warnings {
		fmt.Fprintf(w, "warning: not drawn: %s\n", oneLineError(err))
	}
}

func newReportCmd() *cobra.Command {
	var in inputFlags
	var rf reportFlags
	var val, valLabels string
	cmd := &cobra.Command{
		Use:   "report PRED -o report.html",
		Short: "Write one self-contained HTML report: metrics with intervals, every figure, and the recalibration comparison",
		Long: `report evaluates a prediction file (as calib eval, with bootstrap intervals)
and writes one HTML file that needs nothing else to open: the data summary,
every metric with its interval, reliability diagrams (top-label and per
class), the KS calibration graphs, the simplex view of canonical calibration
(K >= 3), the bandwidth view of ECE^KDE and, with --val, the comparison of
the recalibration methods fitted on the validation set. Figures are inline
SVG; the file refers to no network host.`,
		Example: `  calib report test_logits.npy --labels test_labels.npy --logits -o report.html
  calib report test.npy --labels y.npy --val val.npy --val-labels yv.npy -o report.html`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := rf.options()
			if err != nil {
				return err
			}
			s, err := in.load(args[0])
			if err != nil {
				return err
			}
			vs, err := in.loadVal(val, valLabels, s.K)
			if err != nil {
				return err
			}
			prov := newProvenance(cmd, args)
			prov.input("test", s, in.labels)
			prov.input("val", vs, valLabels)
			doc, err := rf.write(cmd, s, vs, o, prov)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", rf.out)
			warnNotDrawn(cmd.ErrOrStderr(), doc)
			return nil
		},
	}
	in.register(cmd.Flags())
	rf.register(cmd, "the HTML `FILE` to write")
	fs := cmd.Flags()
	fs.StringVar(&val, "val", "", "validation predictions `FILE`: fit every recalibration method on it and compare on PRED")
	fs.StringVar(&valLabels, "val-labels", "", "validation labels `FILE` (if not in the validation file)")
	fs.Lookup("methods").Usage = "recalibration methods of the comparison, comma-separated (default: all)"
	return cmd
}

// parseMethods parses a comma-separated list of fit methods ("" = all).
func parseMethods(list string) ([]string, error) {
	if list == "" {
		return fitMethods, nil
	}
	var ms []string
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		if !slices.Contains(fitMethods, m) {
			return nil, usageErrorf("--methods: unknown method %q (valid: %s)", m, strings.Join(fitMethods, ", "))
		}
		ms = append(ms, m)
	}
	return ms, nil
}
