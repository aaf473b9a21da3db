package report

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/textenum"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
)

// PlotKind is a figure of Plot, named as `calib plot` names it.
type PlotKind int

// The figures of Plot.
const (
	ReliabilityPlot       PlotKind = iota // "reliability": ReliabilityOf
	SmoothReliabilityPlot                 // "smooth": SmoothReliabilityOf (relplot's)
	KSPlot                                // "ks": KSGraphsOf
	SimplexPlot                           // "simplex": SimplexOf
	BandwidthPlot                         // "bandwidth": BandwidthViewOf
	ComparePlot                           // "compare": ComparisonOf
)

var plotNames = [...]string{"reliability", "smooth", "ks", "simplex", "bandwidth", "compare"}

// PlotKinds returns every figure of Plot, in order.
func PlotKinds() []PlotKind {
	out := make([]PlotKind, len(plotNames))
	for i := range out {
		out[i] = PlotKind(i)
	}
	return out
}

// String returns the figure's name ("reliability", ...).
func (k PlotKind) String() string {
	if k < 0 || int(k) >= len(plotNames) {
		return fmt.Sprintf("PlotKind(%d)", int(k))
	}
	return plotNames[k]
}

// ParsePlotKind returns the figure named s (the enumerations' one rule:
// any case, '-' for '_'); an unknown name gives an *OptionError that lists
// the names.
func ParsePlotKind(s string) (PlotKind, error) {
	i, err := textenum.Parse("figure", s, plotNames[:])
	if err != nil {
		return 0, &OptionError{Err: err}
	}
	return PlotKind(i), nil
}

// MarshalText implements encoding.TextMarshaler.
func (k PlotKind) MarshalText() ([]byte, error) {
	n, err := textenum.Name("report: figure", int(k), plotNames[:])
	return []byte(n), err
}

// UnmarshalText implements encoding.TextUnmarshaler (ParsePlotKind).
func (k *PlotKind) UnmarshalText(t []byte) error {
	v, err := ParsePlotKind(string(t))
	if err == nil {
		*k = v
	}
	return err
}

// PlotOptions says what Plot draws where a figure has a choice. The zero
// value draws the class-0 reliability diagrams and the canonical bandwidth
// view; calib plot's defaults are Class -1 and kde.Canonical.
type PlotOptions struct {
	// Class is the class whose probability the reliability diagrams draw;
	// -1 draws the top-label confidence.
	Class  int
	Notion kde.Notion // the notion of the bandwidth view ("": canonical)
}

// Plot makes the figure kind of test, as `calib plot` draws it:
// ReliabilityPlot (ReliabilityOf po.Class), SmoothReliabilityPlot
// (SmoothReliabilityOf po.Class), KSPlot (KSGraphsOf, after the spline
// map fitted on val when val is not nil), SimplexPlot (SimplexOf),
// BandwidthPlot (BandwidthViewOf po.Notion) and ComparePlot (ComparisonOf
// the comparison of o's methods fitted on val, which it needs). An
// unknown kind gives an error wrapping ErrOptions; the errors of a figure
// name test's file and the kind.
func Plot(ctx context.Context, kind PlotKind, test, val *data.Set, o Options, po PlotOptions) (Figure, error) {
	var fig Figure
	var err error
	switch kind {
	case ReliabilityPlot:
		fig, err = ReliabilityOf(ctx, test, po.Class, o)
	case SmoothReliabilityPlot:
		fig, err = SmoothReliabilityOf(ctx, test, po.Class, o)
	case KSPlot:
		fig, err = KSGraphsOf(test, val)
	case SimplexPlot:
		fig, err = SimplexOf(ctx, test, o)
	case BandwidthPlot:
		fig, err = BandwidthViewOf(ctx, test, cmp.Or(po.Notion, kde.Canonical), o)
	case ComparePlot:
		if val == nil {
			return nil, optionsError("the compare figure needs a validation set")
		}
		c, err := compare.Compare(ctx, val, test, o.CompareOptions())
		if err != nil {
			return nil, err
		}
		return ComparisonOf(c), nil
	default:
		return nil, optionsError("unknown figure %v (valid: %s)", kind, strings.Join(plotNames[:], ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", test.File, kind, err)
	}
	return fig, nil
}

// Text holds, as text, the fields of Options that `calib report` and
// `calib plot` take as lists or names, each as its flag takes it; Parse
// reads them.
type Text struct {
	Methods string // Methods: recal.ParseMethods; "" or a list of empty items: nil, every method
	Classes string // Figures.Classes: ParseClasses; "" leaves them
	Binning string // Figures.Bins.Binning: metric.ParseBinning; "" leaves it
}

// Parse sets the fields of o that t holds. Its errors wrap ErrOptions and,
// after its text, start with the option's name ("methods: unknown method
// ...", "classes \"1\": want two classes a,b").
func (t Text) Parse(o *Options) error {
	var err error
	if t.Binning != "" {
		if o.Figures.Bins.Binning, err = metric.ParseBinning(t.Binning); err != nil {
			return optionsError("binning: %v", err)
		}
	}
	if t.Classes != "" {
		if o.Figures.Classes, err = ParseClasses(t.Classes); err != nil {
			return err
		}
	}
	if o.Methods, err = recal.ParseMethods(t.Methods); err != nil {
		return optionsError("methods: %v", err)
	}
	if len(o.Methods) == 0 {
		o.Methods = nil
	}
	return nil
}

// ParseClasses parses the pair of simplex classes "a,b" (FigureOptions.Classes):
// two different integers >= 0. Its errors wrap ErrOptions and read
// `classes "1": want two classes a,b`.
func ParseClasses(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return nil, optionsError("classes %q: want two classes a,b", s)
	}
	var cls []int
	for _, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return nil, optionsError("classes %q: classes are integers >= 0", s)
		}
		cls = append(cls, v)
	}
	if cls[0] == cls[1] {
		return nil, optionsError("classes %q: need two different classes", s)
	}
	return cls, nil
}
