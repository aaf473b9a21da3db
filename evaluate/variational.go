package evaluate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/variational"
)

// variationalDef is the variational calibration error of Berta et al.
// (2026) as probmetrics computes it (package variational): the
// cross-fitted gain of the recalibration families of
// Options.Variational.Family (by default variational.AutoFamilies:
// temperature scaling, log-spline scaling without and with class biases
// and boosted logit corrections, the simplest kept unless a richer one's
// per-row gains beat it significantly) on 5 folds dealt by a hash of each
// row (variational.RowFold), seeded by Options.Seed: p = 1 (of P) is the L1 error CE_1 by the
// lp loss, p = 2 the squared L2 error CE_2^2 by the Brier score (root
// CE_2), and the log loss's KL part has no p; canonical and top-label
// (binary too for one-column input) from one cross-fit, class-wise
// (per-class maps) when K <= 20. The default evaluation (DefaultMetrics)
// computes the canonical CE_1 alone, the Headline: the CE_2^2 and KL rows
// are lower bounds whose shortfall is quadratic in the map's error (where
// the CE_1 row read 0.9 to 1.1 of its truth at n = 5,000, the Brier row
// read 0.65 to 1.03 of CE_2^2: docs/evidence/experiments/headline.txt),
// computed where ece_variational is named.
// Each entry carries its 95 % interval (interval_kind "cross-fit";
// variational.Result): se from the rows' gains and the refitted maps'
// jackknife (map_se) in quadrature, at the normal quantile z that holds
// every candidate family at once (variational.SimultaneousZ: 2.50 for
// four), from Value - z se to the largest of the candidates' Value_f +
// max(0, optimism_f) / 2 + z se_f (Value + reach + z se: a family that
// could reach further than the one chosen widens it); the class-wise
// entries' is conditional on the maps (Value -+ 1.96 se). It
// is the entry's one interval: --ci adds no bootstrap to it. Top-label and
// binary entries split the value into over- and under-confidence.
var variationalDef = metricDef{
	name:      ECEVariational,
	sums:      []*sumsPart{variationalSums},
	configure: func(c *streamConfig, o StreamOptions) error { c.VariationalFamily = o.Variational.Family; return nil },
	kernel:    []*kernelPart{variationalKernel},
	check:     func(o *Options) error { return o.Variational.check() },
	options: []Option{{Name: "variational-family", Kind: TextOption, Default: variational.Auto, Stream: true, Metrics: MetricSet{ECEVariational},
		Usage: "ece_variational: the recalibration families whose cross-fitted gain it is, comma-separated (calib fit methods: temperature, vector, log-spline, boost, dirichlet-odir, isotonic, ...; log-spline-shared; auto = temperature,log-spline-shared,log-spline,boost); each entry reports the simplest family unless a richer one's per-row gains beat it significantly (one-sided paired z > 1.645)",
		set:   setFamilies}},
	variant:  func(e *Result) string { return e.Loss },
	compute:  (*evaluator).variational,
	finish:   finishVariational,
	interval: percentile,
	define: func(_ *config, e *Result) {
		e.Estimator = "variational-crossfit"
	},
}

// variationalConfig is ece_variational's part of a stream's configuration
// (streamConfig): its family list (Options.Variational.Family; "" for
// auto).
type variationalConfig struct {
	VariationalFamily string `json:"variational_family,omitempty"`
}

// VariationalOptions configures ece_variational (Options.Variational). The
// zero value fits variational.Auto (variational.AutoFamilies).
type VariationalOptions struct {
	// Family is the comma-separated list of recalibration families
	// (variational.ParseFamilies: recal method names,
	// "log-spline-shared", "auto"); "" means variational.Auto.
	Family string
}

// check refuses a family list that variational.ParseFamilies refuses.
func (v VariationalOptions) check() error {
	if _, err := variational.ParseFamilies(v.Family); err != nil {
		return optionError("variational-family", "%v", err)
	}
	return nil
}

// VariationalKeys are the keys of an ece_variational entry, embedded in
// Result (its JSON stays flat: "loss", "family", ...).
type VariationalKeys struct {
	Loss     string      `json:"loss,omitempty"`             // the proper loss ("lp", "log", "brier")
	Family   string      `json:"family,omitempty"`           // the recalibration family whose gain it is (variational.FamilyOf)
	MapSE    *data.Float `json:"map_se,omitempty"`           // the part of se from the refitted maps (variational.Result.MapSE)
	Optimism *data.Float `json:"optimism,omitempty"`         // the maps' gain on their training rows less the value (variational.Result.Optimism)
	Reach    *data.Float `json:"reach,omitempty"`            // how far the upper end reaches past value + z se (variational.Result.Reach)
	Z        *data.Float `json:"z,omitempty"`                // the interval's normal quantile, every candidate family held at once (variational.SimultaneousZ)
	Families []string    `json:"families,omitempty"`         // the families fitted, Family the simplest unless a richer one's gains beat it significantly
	Over     *data.Float `json:"over_confidence,omitempty"`  // top_label, binary: the part of the value from lowering the confidence
	Under    *data.Float `json:"under_confidence,omitempty"` // top_label, binary: the part from raising it
	Folds    *int        `json:"folds,omitempty"`            // the cross-fitting folds
}

// variationalClassWiseMaxK is the largest K whose class-wise entries
// ece_variational computes (K binary cross-fits; as ece_kde's "all").
const variationalClassWiseMaxK = 20

func (ev *evaluator) variational() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	families, err := variational.ParseFamilies(c.Variational.Family)
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.Name
	}
	const folds = 5
	vo := variational.Options{Families: families, Folds: folds, Seed: c.Seed}
	rc, err := variational.CrossFit(ev.ctx, s, vo)
	if err != nil {
		return nil, fmt.Errorf("ece_variational: %w", err)
	}
	notions, err := variationalNotions(c, s)
	if err != nil {
		return nil, err
	}
	losses := variationalLosses(c.ps)
	if c.defaulted {
		losses = []variationalLoss{{variational.Lp, 1}} // the headline alone
	}
	var out []*Result
	var cm *variational.ClassMaps
	for _, nt := range notions {
		for _, l := range losses {
			lo := vo
			lo.Loss, lo.P, lo.Notion = l.l, 1, nt
			var r variational.Result
			if nt == notion.ClassWise {
				if cm == nil {
					if cm, err = variational.CrossFitClassWise(ev.ctx, s, vo); err != nil {
						return nil, fmt.Errorf("ece_variational: class_wise: %w", err)
					}
				}
				r, err = cm.Error(lo)
			} else {
				r, err = rc.Error(lo)
			}
			if err != nil {
				return nil, fmt.Errorf("ece_variational: %w", err)
			}
			e := variationalEntry(nt, l.l, r, names, folds)
			if nt == notion.TopLabel || nt == notion.Binary {
				e.Over, e.Under = jf(r.Over), jf(r.Under)
			}
			gains := r.Gains
			ev.setStat(e, func(idx []int) (float64, error) { return meanGain(gains, s.Weights, idx) })
			out = append(out, e)
		}
	}
	return out, nil
}

// variationalNotions returns the notions ece_variational computes: the
// default evaluation computes the headline's notion alone (canonical);
// ece_variational asked for adds top_label and binary or class_wise (up
// to variationalClassWiseMaxK classes), those of Mode where given.
func variationalNotions(c *config, s *data.Set) ([]notion.Notion, error) {
	notions := []notion.Notion{notion.Canonical}
	if c.defaulted {
		return notions, nil
	}
	notions = append(notions, notion.TopLabel)
	if s.Binary {
		notions = append(notions, notion.Binary)
	} else if s.K <= variationalClassWiseMaxK {
		notions = append(notions, notion.ClassWise)
	}
	if !c.Mode.IsZero() {
		notions = slices.DeleteFunc(notions, func(nt notion.Notion) bool {
			return !slices.ContainsFunc(c.notions, func(k kde.Notion) bool { return k.String() == string(nt) })
		})
		if len(notions) == 0 {
			return nil, fmt.Errorf("ece_variational: --mode names none of its notions (canonical, top_label, class_wise, binary)")
		}
	}
	return notions, nil
}

// variationalLoss is a loss of ece_variational with its entry's p: CE_1
// by the lp loss, CE_2^2 by the Brier score; 0 for log.
type variationalLoss struct {
	l variational.Loss
	p float64
}

// variationalLosses returns the losses of the exponents ps: one
// definition per column: p = 1 is the L1 error CE_1 (the lp loss at p =
// 1, E||E[y | f] - f||_1), p = 2 the squared L2 error CE_2^2 (the Brier
// score's gain); the lp loss at other p estimates the mean norm
// E||E[y | f] - f||_p, not CE_p^p, and is not reported. The log loss is
// always there.
func variationalLosses(ps []float64) []variationalLoss {
	var losses []variationalLoss
	for _, p := range ps {
		switch p {
		case 1:
			losses = append(losses, variationalLoss{variational.Lp, 1})
		case 2:
			losses = append(losses, variationalLoss{variational.Brier, 2})
		}
	}
	return append(losses, variationalLoss{variational.Log, 0})
}

// meanGain is the weighted mean of the rows' gains over the resample idx
// (the entry's statistic: the identity resample reads its value).
func meanGain(gains, weights []float64, idx []int) (float64, error) {
	var sw, sg float64
	for _, i := range idx {
		w := mathx.Weight(weights, i)
		sw += w
		sg += w * gains[i]
	}
	if !(sw > 0) {
		return 0, fmt.Errorf("ece_variational: a resample of weight 0")
	}
	return sg / sw, nil
}

// variationalEntry is the ece_variational entry of an estimate r of the
// notion nt and loss l (in memory or streamed): the value, its interval
// (with map_se and optimism but for the class-wise notion, whose interval
// is the rows' given the maps), p and root for the lp (CE_1) and Brier
// (CE_2^2) losses.
func variationalEntry(nt notion.Notion, l variational.Loss, r variational.Result, families []string, folds int) *Result {
	if len(r.Candidates) > 0 {
		// The families fitted: those with too few rows for a fold left
		// out (variational.Family.MinRows).
		families = make([]string, len(r.Candidates))
		for i, c := range r.Candidates {
			families[i] = c.Family
		}
	}
	e := &Result{Metric: ECEVariational, Notion: nt, VariationalKeys: VariationalKeys{Loss: string(l), Family: r.Family, Families: families, Folds: ptr(folds)},
		Value: jf(r.Value), SE: jf(r.SE), Interval: []data.Float{data.Float(r.Lo), data.Float(r.Hi)}, IntervalLevel: ptr(0.95), IntervalKind: "cross-fit"}
	if nt != notion.ClassWise {
		e.MapSE, e.Optimism, e.Reach, e.Z = jf(r.MapSE), jf(r.Optimism), jf(r.Reach), jf(r.Z)
	}
	for _, c := range r.Candidates {
		if c.Err != nil { // passed over: the others fitted
			e.Warnings = append(e.Warnings, warn(EstimatorWarning, fmt.Sprintf("family %s left out, its fit failed: %s", c.Family, strings.TrimPrefix(oneLineError(c.Err), "variational: "))))
		}
	}
	switch l {
	case variational.Lp:
		e.P, e.Root = ptr(1.0), jf(math.Max(0, r.Value)) // CE_1 = E||E[y | f] - f||_1; the root of a negative estimate is 0
	case variational.Brier:
		e.P, e.Root = ptr(2.0), jf(math.Sqrt(math.Max(0, r.Value))) // CE_2^2, root CE_2
	}
	return e
}
