package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
)

// plotKinds lists the figures of `calib plot`.
var plotKinds = []string{"reliability", "ks", "simplex", "bandwidth", "compare"}

// plotFlags are the flags of plot.
type plotFlags struct {
	in                                   inputFlags
	ff                                   figureFlags
	out, val, valLabels, notion, methods string
	grid                                 string
	class                                int
	seed                                 uint64
	workers                              int
}

func (f *plotFlags) register(cmd *cobra.Command) {
	f.in.register(cmd.Flags())
	f.ff.register(cmd, true)
	fs := cmd.Flags()
	fs.StringVarP(&f.out, "output", "o", "", "the figure `FILE` (.png, .svg or .pdf)")
	fs.IntVar(&f.class, "class", -1, "reliability: the class whose probability is drawn (default: the top-label confidence)")
	fs.StringVar(&f.notion, "notion", "canonical", "bandwidth: the ECE^KDE notion (canonical, marginal, top_label, binary)")
	fs.StringVar(&f.val, "val", "", "validation predictions `FILE` (ks: the spline map; compare: every method)")
	fs.StringVar(&f.valLabels, "val-labels", "", "validation labels `FILE` (if not in the validation file)")
	fs.StringVar(&f.methods, "methods", "", "compare: methods, comma-separated (default: all)")
	fs.StringVar(&f.grid, "grid", "default", "compare: cross-validation grid of the ODIR methods")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the bootstrap and the subsamples (0 means 1)")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores)")
	cmd.Flags().Lookup("per-class").Hidden = true
}

// options checks the flags of figure kind before any data is read and
// returns the report options they make.
func (f *plotFlags) options(kind string) (report.Options, error) {
	var o report.Options
	if !slices.Contains(plotKinds, kind) {
		return o, usageErrorf("unknown figure %q (valid: %s)", kind, strings.Join(plotKinds, ", "))
	}
	if f.out == "" {
		return o, usageErrorf("-o FILE.{png,svg,pdf} is required")
	}
	if err := checkOutput("-o", f.out, report.Formats...); err != nil {
		return o, err
	}
	if err := f.in.check(); err != nil {
		return o, err
	}
	if _, err := kde.ParseNotion(f.notion); err != nil {
		return o, usageErrorf("--notion: %v", err)
	}
	ms, err := parseMethods(f.methods)
	if err != nil {
		return o, err
	}
	if kind == "compare" && f.val == "" {
		return o, usageErrorf("plot compare needs --val")
	}
	fo, err := f.ff.options()
	if err != nil {
		return o, err
	}
	o = report.Options{Figures: fo, Grid: f.grid, Seed: f.seed, Workers: f.workers}
	for _, m := range ms {
		o.Methods = append(o.Methods, recal.Method(m))
	}
	if err := o.Validate(); err != nil {
		return o, inputError{err}
	}
	return o, nil
}

// figure makes the figure kind of s (and vs, may be nil).
func (f *plotFlags) figure(ctx context.Context, kind string, s, vs *data.Set, o report.Options) (fig report.Figure, err error) {
	switch kind {
	case "reliability":
		if f.class >= s.K {
			return nil, usageErrorf("--class %d: classes are 0..%d", f.class, s.K-1)
		}
		fig, err = report.ReliabilityOf(s, f.class, o)
	case "ks":
		fig, err = report.KSGraphsOf(s, vs)
	case "simplex":
		fig, err = report.SimplexOf(s, o)
	case "bandwidth":
		notion, _ := kde.ParseNotion(f.notion) // checked by options
		fig, err = report.BandwidthViewOf(s, notion, o)
	case "compare":
		c, err := compare.Compare(ctx, vs, s, o.CompareOptions())
		if err != nil {
			return nil, err
		}
		return report.ComparisonOf(c), nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.File, kind, err)
	}
	return fig, nil
}

func newPlotCmd() *cobra.Command {
	var pf plotFlags
	cmd := &cobra.Command{
		Use:   "plot KIND PRED -o FILE.{png,svg,pdf}",
		Short: "Draw one figure of the report: reliability, ks, simplex, bandwidth or compare",
		Long: `plot draws one figure to a PNG (150 dpi), SVG or PDF file (by the extension):

  reliability  reliability diagram of the top-label confidence, or of one
               class's probability with --class (bins, gap, bootstrap
               interval, Beta-kernel curve, count strip)
  ks           KS calibration graphs of the top-1 score (splines paper Fig. 1);
               with --val also after the spline map fitted on VAL
  simplex      binned and Dirichlet-kernel calibration-error field on the
               simplex (K >= 3; --classes a,b, the rest merged into "other")
  bandwidth    LOO log-likelihood against h and ECE^KDE against h (--notion)
  compare      each metric before and after each recalibration method fitted
               on --val (as calib compare)`,
		Example: `  calib plot reliability test.npy --labels y.npy -o rel.png
  calib plot reliability test.npy --labels y.npy --class 3 --binning equal_mass -o cat.svg
  calib plot simplex test_logits.npy --labels y.npy --logits --classes 3,5 -o simplex.pdf`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			o, err := pf.options(kind)
			if err != nil {
				return err
			}
			s, err := pf.in.load(args[1])
			if err != nil {
				return err
			}
			vs, err := pf.in.loadVal(pf.val, pf.valLabels, s.K)
			if err != nil {
				return err
			}
			fig, err := pf.figure(cmd.Context(), kind, s, vs, o)
			if err != nil {
				return err
			}
			format := strings.TrimPrefix(strings.ToLower(filepath.Ext(pf.out)), ".")
			if err := writeAtomic(pf.out, func(w io.Writer) error { return report.Write(w, fig, format) }); err != nil {
				return fmt.Errorf("%s: %w", pf.out, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s written to %s\n", kind, pf.out)
			return nil
		},
	}
	pf.register(cmd)
	return cmd
}
