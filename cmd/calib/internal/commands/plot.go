package commands

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/atomicfile"
	"github.com/calib-dev/calib/convention"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/report"
)

// plotFlags are the flags of plot.
type plotFlags struct {
	in                                inputFlags
	ff                                figureFlags
	po                                report.PlotOptions
	out, val, valLabels, notion, grid string
	convention                        string
	seed                              uint64
	workers                           int
}

func (f *plotFlags) register(cmd *Command) {
	f.in.register(cmd.Flags())
	f.in.registerWeights(cmd.Flags(), true)
	f.ff.register(cmd, true)
	fs := cmd.Flags()
	fs.StringVarP(&f.out, "output", "o", "", "the figure `FILE` (.png, .svg or .pdf)")
	fs.IntVar(&f.po.Class, "class", -1, "reliability, smooth: the class whose probability is drawn (default: the top-label confidence)")
	fs.StringVar(&f.convention, "convention", "calib", "reliability -o FILE.json: whose bins the data follow (calib, sklearn, torchmetrics, netcal, relplot, hendrycks, robustness_metrics, torch_uncertainty)")
	fs.StringVar(&f.notion, "notion", string(kde.Canonical), "bandwidth: the ECE^KDE notion (canonical, class_wise, top_label, binary)")
	fs.StringVar(&f.val, "val", "", "validation predictions `FILE` (ks: the spline map; compare: every method)")
	fs.StringVar(&f.valLabels, "val-labels", "", "validation labels `FILE` (if not in the validation file)")
	fs.StringVar(&f.ff.text.Methods, "methods", "", "compare: methods, comma-separated (default: all)")
	fs.StringVar(&f.grid, "grid", "default", "compare: cross-validation grid of the ODIR methods")
	fs.Uint64Var(&f.seed, "seed", DefaultSeed, "seed of the bootstrap and the subsamples (0 means 1)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	cmd.Flags().Lookup("per-class").Hidden = true
}

// plotReaders names the figures that read each flag of plot that some
// figures read.
var plotReaders = map[string][]string{
	"class": {"reliability", "smooth"}, "notion": {"bandwidth"}, "classes": {"simplex"},
	"bins": {"reliability"}, "binning": {"reliability"},
	"methods": {"compare"}, "grid": {"compare"},
	"val": {"ks", "compare"}, "val-labels": {"ks", "compare"}, "val-weights": {"ks", "compare"},
	"seed": {"reliability", "smooth", "simplex", "compare"},
}

// options checks the flags of figure kind before any data is read and
// returns the report options they make.
func (f *plotFlags) options(fs *pflag.FlagSet, kind report.PlotKind) (report.Options, error) {
	var o report.Options
	exts := report.Formats()
	if kind == report.ReliabilityPlot || kind == report.SmoothReliabilityPlot {
		exts = append(slices.Clone(exts), "json")
	}
	if err := requireOutput(f.out, "FILE.{png,svg,pdf}", exts...); err != nil {
		return o, err
	}
	n, err := convention.Parse(f.convention)
	if err != nil {
		return o, usageErrorf("--convention %q: %v", f.convention, pkgerr.Reason(err))
	}
	if n != convention.Calib && (kind != report.ReliabilityPlot || !f.json()) {
		return o, usageErrorf("--convention %s: only the data of a reliability diagram (-o FILE.json) follow another library's bins; the figures are drawn with calib's", f.convention)
	}
	if strings.TrimSpace(f.ff.text.Binning) == "equal_mass" && !n.EqualMass() {
		return o, usageErrorf("--binning equal_mass: --convention %s's library has no equal-mass bins (calib's and sklearn's have)", f.convention)
	}
	if f.po.Notion, err = kde.ParseNotion(f.notion); err != nil {
		return o, optionError("--notion", err)
	}
	if kind == report.ComparePlot && f.val == "" {
		return o, usageErrorf("plot compare needs --val")
	}
	if err := refuseUnread(fs, plotReaders, "the figure", []string{kind.String()}); err != nil {
		return o, err
	}
	for _, flag := range []string{"val-labels", "val-weights"} {
		if fs.Changed(flag) && f.val == "" {
			return o, usageErrorf("--%s applies to the validation set of --val, and none is given", flag)
		}
	}
	if o, err = f.ff.options(report.Options{Grid: f.grid, Seed: f.seed, Workers: f.workers}); err != nil {
		return o, err
	}
	return o, refuseUnread(fs, gridReaders, "--methods", methodNames(o.Methods))
}

func newPlotCmd() *Command {
	var pf plotFlags
	cmd := command("plot KIND PRED -o FILE.{png,svg,pdf}", "Draw one figure of the report: reliability, smooth (relplot's smooth reliability diagram), ks, simplex, bandwidth or compare", exactArgs(2), func(cmd *Command, args []string) error {
		kind, err := report.ParsePlotKind(args[0])
		if err != nil {
			return usageErrorf("%s", optionMessage(err))
		}
		o, err := pf.options(cmd.Flags(), kind)
		if err != nil {
			return err
		}
		s, err := pf.in.load(cmd, args[1])
		if err != nil {
			return err
		}
		vs, err := pf.in.loadVal(cmd, pf.val, pf.valLabels, s.K)
		if err != nil {
			return err
		}
		if (kind == report.ReliabilityPlot || kind == report.SmoothReliabilityPlot) && pf.po.Class >= s.K {
			return usageErrorf("--class %d: classes are 0..%d", pf.po.Class, s.K-1)
		}
		if kind == report.BandwidthPlot && pf.po.Notion == kde.Binary && !s.Binary && s.K != 2 {
			return usageErrorf("--notion binary: the predictions have K = %d classes; binary needs two (or one column, p1)", s.K)
		}
		if pf.json() {
			return pf.writeData(cmd, kind, s, o)
		}
		fig, err := report.Plot(cmd.Context(), kind, s, vs, o, pf.po)
		if err != nil {
			return err
		}
		if err := report.Save(pf.out, fig); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s written to %s\n", kind, pf.out)
		return nil
	})
	pf.register(cmd)
	return cmd
}

// json reports whether -o names a JSON file: the diagram's data.
func (f *plotFlags) json() bool { return strings.EqualFold(filepath.Ext(f.out), ".json") }

// writeData writes the data of a reliability (under --convention) or
// smooth diagram to -o.
func (f *plotFlags) writeData(cmd *Command, kind report.PlotKind, s *data.Set, o report.Options) error {
	var v any
	if kind == report.SmoothReliabilityPlot {
		d, err := report.SmoothCurveDataOf(cmd.Context(), s, f.po.Class, o)
		if err != nil {
			return err
		}
		v = d
	} else {
		n, _ := convention.Parse(f.convention)
		b := o.Figures.Bins
		if b.Bins == 0 {
			b.Bins = metric.DefaultBins
		}
		d, err := report.CurveDataOf(s, f.po.Class, n, b.Bins, b.Binning)
		if err != nil {
			return err
		}
		v = d
	}
	if err := atomicfile.Write(f.out, func(w io.Writer) error { return report.WriteJSON(w, v) }); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s data written to %s\n", kind, f.out)
	return nil
}
