// Package variational estimates a calibration error as the gain of the
// best recalibration of a family, fitted on other folds: the variational
// estimator of Berta, Braun, Holzmüller, Bach and Jordan (2026, arXiv
// 2602.24230), as probmetrics' MetricsWithCalibration computes it
// (dholzmueller/probmetrics @34123ba, metrics.py).
//
// # Definition
//
// For a proper loss l and a recalibration map g fitted on the other folds
// (each row dealt to a fold by a hash of its values and place, RowFold:
// each row's g never saw it), the estimate is
//
//	CE = (1/n) sum_i [ l(f_i, y_i) - l(g(f_i), y_i) ]
//
// over the out-of-fold rows of every fold together. Its expectation is at
// most the calibration error the loss measures (a map fitted on finite
// data does not beat the true recalibration E[y | f]), with equality when
// the family holds it; an in-sample fit (probmetrics' "_all" names) is not
// a lower bound and is not offered. The losses:
//
//   - Log: -log g_y (log-probabilities clipped at log of float32's
//     smallest normal, as probmetrics does): CE is the KL divergence part
//     of the log loss's calibration-refinement split.
//   - Brier: sum_k (g_k - y_k)^2: the squared L2 calibration error.
//   - Lp (probmetrics' ProperLpLoss, centred at the prediction f):
//     l(g, y) = <s, y - g> - ||g - f||_p with s = -grad ||.||_p(g - f) =
//     -sign(g - f) |g - f|^(p-1) / ||g - f||_p^(p-1) (and l = 0 where g =
//     f), so that l(f, y) = 0 and CE_i = <grad ||.||_p(g_i - f_i), y_i -
//     f_i>: for p = 1, sum_k sign(g_ik - f_ik) (y_ik - f_ik). Its
//     expectation is the canonical L_p calibration error E||E[y | f] -
//     f||_p when g is the true recalibration.
//
// Notions: canonical (the K-vector), binary (one-column input: p1 alone,
// probmetrics' "binary-as-1d"), top-label (probmetrics' TopClassLoss: the
// coordinate k = argmax f of f, g and y, with the canonical map g, so its
// expectation is at most E|E[y_k | f] - f_k|, which is at least the
// top-label error E|E[y_k | f_k] - f_k|) and class-wise (ClassWise: maps
// of each f_k alone, summed over classes). Top-label and binary results
// split into over- and under-confidence (probmetrics' OverConfidenceLoss
// and UnderConfidenceLoss).
//
// # Families
//
// Each family (Family: a recal method and its options) is cross-fitted;
// the estimate is that of the simplest family unless a richer one's
// per-row gains beat it significantly (Recalibrated.Error). The default,
// AutoFamilies, is temperature scaling and log-spline scaling
// (recal.LogSpline) without and with class biases, which hold a
// temperature, label smoothing's inverse and a shift of the class priors,
// the miscalibrations that many-class models show, with at most K + 9
// parameters, and boosted logit corrections (recal.Boost) for what none of
// them holds.
//
// The interval (Recalibrated.Error) holds the rows' spread and the fitted
// maps': their spread between data sets (a delete-a-fold jackknife) and
// their shortfall against the recalibration they estimate (half their
// optimism on their own training rows, added to the upper end); the
// class-wise notion's is the rows' alone, given the maps.
package variational

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/internal/rowkey"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/recal"
)

// Loss names a proper loss.
type Loss string

// The losses.
const (
	Lp    Loss = "lp"    // probmetrics' ProperLpLoss (Options.P)
	Log   Loss = "log"   // the log loss
	Brier Loss = "brier" // the Brier score
)

// Options configures CalibrationError. The zero value is the L1 error
// (Lp, p = 1) of the canonical notion by the automatic choice among
// AutoFamilies on 5 folds (RowFold), seed 0.
type Options struct {
	Loss Loss    // "" means Lp
	P    float64 // the p of Lp, >= 1; 0 means 1
	// Families are the recalibration families (logit maps read the
	// logits, or log-probabilities for probability input); nil means
	// AutoFamilies. With more than one, CrossFit fits each and keeps the
	// one whose out-of-fold maps gain the most log loss (see CrossFit).
	Families []Family
	// Folds is the number of folds, at least 2; 0 means 5.
	Folds int
	// Seed seeds the folds: row i goes to RowFold(Seed, y_i, f_i, 0, i,
	// Folds). probmetrics stratifies by the label; that leaks the
	// label into the row's own map (see CrossFit).
	Seed uint64
	// Notion is canonical (""), top_label, or binary (one-column input);
	// class_wise is ClassWise's.
	Notion notion.Notion

	noFit bool // CrossFit: only check the input and deal the folds
	// keep, when set, makes the fit lean: each family keeps the per-row
	// gains of these losses (canonical notion) instead of its n×K
	// out-of-fold probabilities, and Error answers only them.
	keep []Options
}

// Result is a variational calibration error.
type Result struct {
	Value float64 // the mean gain, CE
	// PerFold is the mean gain of each fold's rows.
	PerFold []float64
	// SE is the standard error of Value; Lo and Hi the 95 % interval.
	// Recalibrated.Error's: SE = sqrt(s^2 + MapSE^2) for the standard
	// error s of the mean of the per-row gains given the fitted maps and
	// MapSE, the maps' own (the delete-a-fold jackknife of their mean
	// gains, fitUncertainty); with z = Z the normal quantile that holds
	// all M candidate families at once (Bonferroni, SimultaneousZ),
	// Lo = Value - z SE and Hi = Value + Reach + z SE, where Hi is the
	// largest of the candidates' upper ends V_f + max(0, Optimism_f) / 2
	// + z SE_f (Recalibrated.interval). The class-wise notion's
	// (ClassMaps) and a paired comparison's are conditional on the maps:
	// MapSE, Optimism and Reach 0, Value -+ 1.96 s.
	SE, Lo, Hi float64
	// Z is the normal quantile of the interval (1.96 for one family).
	Z float64
	// Reach is Hi - Value - Z SE: how far past the chosen family's value
	// the families' fits could reach (at least half its Optimism).
	Reach float64
	// MapSE is the part of SE from the maps' dependence on the data.
	MapSE float64
	// Optimism is the fitted maps' mean gain on their own training rows
	// less Value: about the fit's excess risk on new rows, by which Value
	// falls short of the error the family can reach.
	Optimism float64
	N, Folds int
	// Gains are the per-row gains l(f_i, y_i) - l(g(f_i), y_i), whose
	// (weighted) mean is Value: a bootstrap of the rows resamples them.
	Gains []float64
	// Over and Under split Value (top-label and binary notions; 0
	// otherwise) as probmetrics' OverConfidenceLoss and
	// UnderConfidenceLoss do: the gain of g clipped so that it only
	// lowers (Over) or only raises (Under) the confidence in the predicted
	// class (confidenceClips). Over + Under = Value but for rows at f =
	// 1/2 (binary), which count in neither.
	Over, Under float64
	// Family is the family whose estimate this is, one of Candidates
	// (Recalibrated.Error).
	Family     string
	Candidates []Candidate
	// Unfitted lists the classes ClassWise left as they were under
	// Family.
	Unfitted []int
}

// ErrInput is wrapped by the errors of input the estimator cannot take.
var ErrInput = errors.New("variational: invalid input")

// CalibrationError returns the variational calibration error of the set s
// (its probabilities, logits if any, labels and sample weights: the gains
// are weighted means, the maps fitted with the weights) under o:
// CrossFit, then Recalibrated.Error.
func CalibrationError(ctx context.Context, s *data.Set, o Options) (Result, error) {
	r, err := CrossFit(ctx, s, o)
	if err != nil {
		return Result{}, err
	}
	return r.Error(o)
}

// Recalibrated holds a set's out-of-fold recalibrated probabilities under
// each family: each row's from the map fitted on the other folds.
type Recalibrated struct {
	set   *data.Set
	fits  []familyFit
	fold  []int
	folds int
	keep  []Options // a lean fit's losses (Options.keep)
	// minTrain is the fewest training rows a fold leaves (the rows
	// outside the largest fold).
	minTrain int
	mu       sync.Mutex // guards fits' gIn and keptIn
}

// familyFit is one family's out-of-fold probabilities (n×K), or the error
// of a fold's fit.
type familyFit struct {
	name   string
	method recal.Method
	g      []float64
	maps   []recal.Calibrator // fold f's map, fitted on the other folds
	gIn    []float64          // inSample's probabilities, once computed
	err    error
	// A lean fit's (Options.keep) per-row gains by loss, in place of g
	// and gIn: out of fold, and in sample once computed.
	kept, keptIn map[lossKey][]float64
}

// lossKey names a loss of the canonical notion.
type lossKey struct {
	loss Loss
	p    float64
}

// Candidate is one family's estimate (Err set, Value NaN, where a fold's
// fit failed).
type Candidate struct {
	Family string
	Value  float64
	Err    error
}

// CrossFit fits each of o.Families on all folds but one, for each fold,
// and applies it to the rows of that fold (o.Loss, P and Notion are not
// read). A family whose fit fails on some fold is passed over when
// another fits (Error lists it with its error); the error is returned
// when none does.
func CrossFit(ctx context.Context, s *data.Set, o Options) (*Recalibrated, error) {
	families := o.families()
	if len(families) == 0 {
		return nil, fmt.Errorf("%w: no recalibration family", ErrInput)
	}
	if o.Folds == 0 {
		o.Folds = 5
	}
	switch {
	case o.Folds < 2:
		return nil, fmt.Errorf("%w: %d folds, want at least 2", ErrInput, o.Folds)
	case s.Labels == nil:
		return nil, fmt.Errorf("%w: no labels", ErrInput)
	case s.N < o.Folds:
		return nil, fmt.Errorf("%w: %d rows for %d folds", ErrInput, s.N, o.Folds)
	}
	// Folds by a hash of each row's values and place (RowFold), not
	// stratified by the label: folds dealt by label make a row's training
	// set depend on its own label (its class gets 4/5 of a row more in the
	// other folds), which the Lp loss's sign(g - f) turns into a gain
	// above the calibration error (measured on 16 data sets, K = 20, n =
	// 5,000, label smoothing 0.1, vector scaling: the estimate exceeds its
	// expectation given the maps, E[gain | g] of about 0.047, by 0.0245 +-
	// 0.0040 with folds by label, by -0.0000 +- 0.0043 with these;
	// TestFoldsDoNotLeakLabels). A row's fold
	// is a function of the row alone, so a stream deals its rows as a set
	// in memory does.
	return crossFitFolds(ctx, s, o, RowFolds(s, o.Folds, o.Seed))
}

// crossFitFolds is CrossFit with the folds given (o checked, o.Folds
// set).
func crossFitFolds(ctx context.Context, s *data.Set, o Options, fold []int) (*Recalibrated, error) {
	families := o.families()
	rc := &Recalibrated{set: s, fold: fold, folds: o.Folds, keep: o.keep}
	size := make([]int, o.Folds)
	for _, f := range rc.fold {
		size[f]++
	}
	if slices.Contains(size, s.N) {
		return nil, fmt.Errorf("%w: all %d rows fell in one of %d folds: too few rows", ErrInput, s.N, o.Folds)
	}
	rc.minTrain = s.N - slices.Max(size)
	if o.noFit {
		return rc, nil
	}
	var jobs []fitJob
	for _, fam := range families {
		if rc.tooFew(fam) && len(families) > 1 {
			continue // too few rows for the family: not a candidate
		}
		ff := familyFit{name: fam.Name, method: fam.Method}
		var put func(idx []int, out []float64)
		if rc.keep != nil {
			kept := rc.newKept()
			ff.kept = kept
			put = func(idx []int, out []float64) { rc.keepGains(kept, idx, out) }
		} else {
			ff.g = make([]float64, len(s.Probs))
			put = into(ff.g, s.K)
		}
		rc.fits = append(rc.fits, ff)
		jobs = append(jobs, fitJob{set: s, fam: fam, put: put})
	}
	maps, errs, err := crossFitAll(ctx, jobs, rc.fold, o.Folds)
	if err != nil {
		return nil, err
	}
	if len(families) == 1 && errs[0] != nil {
		return nil, errs[0]
	}
	// One of several may fail where the others fit (a temperature at the
	// end of its range on degenerate logits).
	var failed []error
	for j := range rc.fits {
		rc.fits[j].maps, rc.fits[j].err = maps[j], errs[j]
		if errs[j] != nil {
			failed = append(failed, errs[j])
		}
	}
	if len(failed) == len(rc.fits) {
		return nil, noFamilyFits(failed)
	}
	return rc, nil
}

// tooFew reports whether a fold leaves fewer training rows than the
// family's MinRows.
func (rc *Recalibrated) tooFew(fam Family) bool { return rc.minTrain < fam.MinRows }

// noFamilyFits is the error of a cross-fit where every family's fit
// failed: each family's error (a message naming each, for one reason
// rarely explains the others: on labels of one class the temperature
// runs to the end of its range while the log-splines need two classes).
type noFamilyFits []error

func (e noFamilyFits) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = pkgerr.Reason(err)
	}
	return "variational: no family fits these data: " + strings.Join(msgs, "; ")
}

// Unwrap returns each family's error (errors.Is finds the input's fault
// in any).
func (e noFamilyFits) Unwrap() []error { return e }

// fitJob is one family's cross-fit on one set: its out-of-fold
// probabilities go to put (crossFitAll).
type fitJob struct {
	set *data.Set
	fam Family
	put func(idx []int, out []float64)
}

// crossFitAll returns, for each job, each fold's map of its family
// (maps[j][f]; nil where the job failed) and the job's error (the first
// fold's in fold order, or the knots'), giving put the out-of-fold
// probabilities of each fold's rows idx (len(idx)×K). A log-spline
// family's knots are placed once per set and knot count, on every row's
// predictions (they read no label, so no row's own map learns from its
// label), and each fold's fit starts from the previous fold's map: the
// job's folds are one chain. Every other family's folds are independent.
// The chains and the folds run at once on GOMAXPROCS goroutines, the
// chains first (the longest items); each item writes only its own maps,
// errors and rows, so that the results are the same for any number of
// goroutines. The error returned is the context's.
func crossFitAll(ctx context.Context, jobs []fitJob, fold []int, folds int) ([][]recal.Calibrator, []error, error) {
	maps := make([][]recal.Calibrator, len(jobs))
	foldErrs := make([][]error, len(jobs))
	type item struct{ job, fold int } // fold -1: the job's chain
	var chains, rest []item
	for j, jb := range jobs {
		maps[j], foldErrs[j] = make([]recal.Calibrator, folds), make([]error, folds)
		if chained(jb.fam) {
			chains = append(chains, item{j, -1})
			continue
		}
		for f := range folds {
			rest = append(rest, item{j, f})
		}
	}
	items := append(chains, rest...)
	var kn knotCache
	fitFold := func(jb fitJob, f int, fit recal.FitOptions) (recal.Calibrator, error) {
		train, test := split(fold, f)
		c, err := recal.Fit(ctx, jb.fam.Method, withLogits(rows(jb.set, train), jb.fam.Method), fit)
		if err != nil {
			return nil, pkgerr.Errorf("variational", "%s, fold %d: %w", jb.fam.Name, f, err)
		}
		if err := applyRows(jb.put, c, jb.fam.Method, jb.set, test); err != nil {
			return nil, pkgerr.Errorf("variational", "%s, fold %d: %w", jb.fam.Name, f, err)
		}
		return c, nil
	}
	if err := parallel.ForContext(ctx, len(items), 0, func() struct{} { return struct{}{} }, func(_ struct{}, i int) {
		it := items[i]
		jb := jobs[it.job]
		if it.fold >= 0 {
			maps[it.job][it.fold], foldErrs[it.job][it.fold] = fitFold(jb, it.fold, jb.fam.Fit)
			return
		}
		fit := jb.fam.Fit
		if fit.LogSpline.KnotsAt == nil {
			t, err := kn.get(jb.set, fit.LogSpline)
			if err != nil {
				foldErrs[it.job][0] = pkgerr.Errorf("variational", "%s: %w", jb.fam.Name, err)
				return
			}
			fit.LogSpline.KnotsAt = t
		}
		for f := range folds {
			if ctx.Err() != nil {
				return
			}
			c, err := fitFold(jb, f, fit)
			if err != nil {
				foldErrs[it.job][f] = err
				return
			}
			maps[it.job][f] = c
			fit.LogSpline.Start = c.(*recal.LogSpline) // the next fold's fit starts here
		}
	}); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(jobs))
	for j := range jobs {
		for _, err := range foldErrs[j] {
			if err != nil {
				errs[j], maps[j] = err, nil
				break
			}
		}
	}
	return maps, errs, nil
}

// chained reports whether the family's folds are fitted as a chain, each
// from the previous fold's map (log-spline scaling).
func chained(fam Family) bool { return fam.Method == recal.MethodLogSpline }

// knotCache holds the log-spline knots of each set and knot count,
// placed once whichever chain asks first (the others of that key wait;
// other keys do not).
type knotCache struct {
	mu sync.Mutex
	m  map[knotKey]*knotEntry
}

type knotKey struct {
	set   *data.Set
	knots int
}

type knotEntry struct {
	once sync.Once
	at   []float64
	err  error
}

// get returns the knots of the log-spline options o on s (recal.LogSplineKnots
// on every row's log-probabilities).
func (kc *knotCache) get(s *data.Set, o recal.LogSplineOptions) ([]float64, error) {
	kc.mu.Lock()
	key := knotKey{s, o.Knots}
	e := kc.m[key]
	if e == nil {
		if kc.m == nil {
			kc.m = map[knotKey]*knotEntry{}
		}
		e = &knotEntry{}
		kc.m[key] = e
	}
	kc.mu.Unlock()
	e.once.Do(func() {
		ws := withLogits(s, recal.MethodLogSpline)
		e.at, e.err = recal.LogSplineKnots(ws.Probs, recal.TwoColumnLogits(ws), ws.K, ws.Weights, o)
	})
	return e.at, e.err
}

// into returns the sink of applyRows that writes each row's K
// probabilities to its place in g (n×K).
func into(g []float64, k int) func(idx []int, out []float64) {
	return func(idx []int, out []float64) {
		for j, i := range idx {
			copy(g[i*k:(i+1)*k], out[j*k:(j+1)*k])
		}
	}
}

// applyRows gives put the probabilities of the rows idx of s under the
// map c of method m (len(idx)×K); nothing for no rows (a fold the hash
// left empty).
func applyRows(put func(idx []int, out []float64), c recal.Calibrator, m recal.Method, s *data.Set, idx []int) error {
	if len(idx) == 0 {
		return nil
	}
	out, err := recal.Apply(c, withLogits(rows(s, idx), m))
	if err != nil {
		return err
	}
	put(idx, out.Probs)
	return nil
}

// split returns the rows outside fold f (its map's training rows) and
// those in it.
func split(fold []int, f int) (train, test []int) {
	for i, fi := range fold {
		if fi == f {
			test = append(test, i)
		} else {
			train = append(train, i)
		}
	}
	return train, test
}

// Error returns the variational calibration error of the loss, p and
// notion of o: the estimate of one of the families, each a lower bound
// in expectation of the error the loss measures, chosen by best (the
// simplest unless a richer one gains significantly more on the same
// rows). The choice reads the rows' labels, so it is slightly optimistic:
// measured in EXPERIMENTS.md on calibrated models, where the truth is 0.
// Result.Family names the family chosen, Result.Candidates lists them
// all.
func (rc *Recalibrated) Error(o Options) (Result, error) {
	s := rc.set
	o, err := o.withLoss()
	if err != nil {
		return Result{}, err
	}
	switch o.Notion {
	case "", notion.Canonical, notion.TopLabel:
	case notion.Binary:
		if !s.Binary {
			return Result{}, fmt.Errorf("%w: the binary notion needs one-column input", ErrInput)
		}
	default:
		return Result{}, fmt.Errorf("%w: notion %q (valid: canonical, top_label, binary)", ErrInput, o.Notion)
	}
	if canonical := o.Notion == "" || o.Notion == notion.Canonical; rc.keep != nil && (!canonical || !slices.ContainsFunc(rc.keep, func(k Options) bool { return keyOf(k) == keyOf(o) })) {
		return Result{}, fmt.Errorf("%w: a lean fit answers %d losses of the canonical notion, not %s p = %g (%s)", ErrInput, len(rc.keep), o.Loss, o.P, o.Notion)
	}
	r, each := rc.best(func(fi int) Result { return rc.errorOf(o, fi) })
	if err := rc.interval(o, &r, each); err != nil {
		return Result{}, err
	}
	return r, nil
}

// interval sets the ends of r, the estimate of the family chosen among
// rc's candidates (each: every family's estimate, best's), so that they account for the choice and for each
// family's fit. The lower end reads the chosen family at the level that
// holds every candidate at once: each family's out-of-fold gain is at
// most the calibration error in expectation, so Bonferroni's bound over
// the M candidates (z = SimultaneousZ(M)) is a lower confidence bound
// of the error whichever family the data chose. The upper end is the
// largest of the candidates' upper ends V_f + max(0, Optimism_f) / 2 + z
// SE_f (fitUncertainty): a lower bound whose family falls short of the
// truth (a richer family's fit, noisy at small n, reaching further than
// the family chosen) is covered by the family that could reach it. On
// the ground-truth grid (EXPERIMENTS.md section 9) the chosen family's
// own interval at z = 1.96 held the truth in 11 to 34 of 40 data sets
// where the miscalibration's direction changes between regions at n =
// 1,000 (K = 100 to 2); this one in 39 to 40, and in 37 to 40 in every
// cell of the grid.
func (rc *Recalibrated) interval(o Options, r *Result, each []Result) error {
	var fitted []int // the candidates with maps
	for i, f := range rc.fits {
		if f.err == nil && f.maps != nil {
			fitted = append(fitted, i)
		}
	}
	if len(fitted) == 0 {
		return nil // no fitted maps: the rows' interval (summarize)
	}
	z := SimultaneousZ(len(fitted))
	hi := math.Inf(-1)
	for _, i := range fitted {
		fr := &each[i]
		if rc.fits[i].name == r.Family {
			fr = r
		}
		if err := rc.fitUncertainty(o, i, fr); err != nil {
			return err
		}
		hi = max(hi, fr.Value+max(0, fr.Optimism)/2+z*fr.SE)
	}
	// Reach >= max(0, Optimism) / 2 >= 0 but for rounding.
	r.Z, r.Reach = z, max(0, hi-r.Value-z*r.SE)
	r.setEnds()
	return nil
}

// setEnds sets Lo = Value - Z SE and Hi = Value + Reach + Z SE, the
// interval's definition (Result) wherever its parts come from.
func (r *Result) setEnds() {
	r.Lo, r.Hi = r.Value-r.Z*r.SE, r.Value+r.Reach+r.Z*r.SE
}

// SimultaneousZ returns the normal quantile of two-sided 95 % intervals
// that hold m estimates at once by Bonferroni's inequality,
// Phi^-1(1 - 0.025 / m): 1.96 for one, 2.50 for four.
func SimultaneousZ(m int) float64 {
	if m <= 1 {
		return z95
	}
	return -math.Sqrt2 * math.Erfcinv(2*(1-0.025/float64(m)))
}

// fitUncertainty adds to r, the estimate of the family rc.fits[fi], what
// its fitted maps add to the uncertainty of the out-of-fold mean. Each
// row i of fold f also gets the gain G_i,f+1 of the next fold's map (f +
// 1 mod F, inSample), which was fitted on it, beside its own out-of-fold
// gain G_i,f (r's). The paired differences D_i = G_i,f+1 - G_i,f give:
//
//   - Optimism = the (weighted) mean of D: the maps gain more on their
//     own training rows than on new ones, by about as much as their
//     out-of-fold gain falls short of the recalibration they estimate
//     (the fit's excess risk: Value's downward bias, which grows with the
//     parameters per row). The interval's upper end moves up by half of
//     it, the ratio of shortfall to optimism measured on the ground-truth
//     grid (EXPERIMENTS.md).
//   - MapSE^2 = (F - 1)^2 / (2F) max(0, s^2 - e): the delete-a-fold
//     jackknife of the maps' dependence on the data, (F - 1)/F sum_j
//     (c_j - mean c)^2 over the maps' mean gains c_j, from the spread s^2 of
//     the folds' mean D (d_f = c_f+1 - c_f + Optimism + noise: E s^2 = 2
//     Var_b + e for the maps' between-map variance Var_b = E sum_j (c_j -
//     mean c)^2 / (F - 1) and e the folds' mean D's noise, the mean of
//     their squared standard errors). To first order Value - E Value =
//     (row noise) + sum_i psi_i / n over the rows' influences on the maps,
//     whose variance Var(psi) / n the jackknife estimates.
//
// SE becomes sqrt(SE^2 + MapSE^2) (the ends: interval).
func (rc *Recalibrated) fitUncertainty(o Options, fi int, r *Result) error {
	s := rc.set
	in, err := rc.inSampleGains(o, fi)
	if err != nil {
		return err
	}
	folds := rc.folds
	sw, sd := make([]float64, folds), make([]float64, folds) // per fold: sum w, sum w D
	sw2 := make([]float64, folds)
	var tw, td float64
	for i, g := range in {
		w, f := mathx.Weight(s.Weights, i), rc.fold[i]
		sw[f] += w
		sw2[f] += w * w
		sd[f] += w * (g - r.Gains[i])
		tw += w
		td += w * (g - r.Gains[i])
	}
	// The folds with rows (the hash may leave one empty at small n).
	var d []float64
	for f := range folds {
		if sw[f] > 0 {
			d = append(d, sd[f]/sw[f])
		}
	}
	// The folds' noise: each fold's weighted variance of D over its
	// effective rows less one.
	v := make([]float64, folds)
	for i, g := range in {
		f := rc.fold[i]
		x := g - r.Gains[i] - sd[f]/sw[f]
		v[f] += mathx.Weight(s.Weights, i) * x * x
	}
	var mean, noise, ss float64
	nf := float64(len(d))
	for f := range folds {
		if neff := sw[f] * sw[f] / sw2[f]; sw[f] > 0 && neff > 1 {
			noise += v[f] / sw[f] / (neff - 1) / nf
		}
	}
	for _, x := range d {
		mean += x / nf
	}
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	tau2 := 0.0
	if nf > 1 {
		tau2 = (nf - 1) * (nf - 1) / (2 * nf) * max(0, ss/(nf-1)-noise)
	}
	r.MapSE = math.Sqrt(tau2)
	r.Optimism = td / tw
	r.SE = math.Sqrt(r.SE*r.SE + tau2)
	return nil
}

// inSample returns the probabilities of each row of fold f under the map
// of fold f + 1 (mod F), fitted on it, of the family rc.fits[fi]:
// computed once, kept beside the out-of-fold ones.
func (rc *Recalibrated) inSample(fi int) ([]float64, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ff := &rc.fits[fi]
	if ff.gIn != nil {
		return ff.gIn, nil
	}
	s := rc.set
	g := make([]float64, len(s.Probs))
	err := rc.applyInSample(fi, into(g, s.K))
	if err != nil {
		return nil, err
	}
	ff.gIn = g
	return g, nil
}

// applyInSample gives put the probabilities of each fold's rows under the
// next fold's map of family fi.
func (rc *Recalibrated) applyInSample(fi int, put func(idx []int, out []float64)) error {
	ff := &rc.fits[fi]
	for f := range rc.folds {
		_, rowsOf := split(rc.fold, f)
		next := (f + 1) % rc.folds
		if err := applyRows(put, ff.maps[next], ff.method, rc.set, rowsOf); err != nil {
			return fmt.Errorf("variational: %s, fold %d's map on fold %d: %w", ff.name, next, f, err)
		}
	}
	return nil
}

// inSampleGains returns the per-row gains of o's loss under inSample's
// probabilities; in a lean fit, those of every kept loss are computed at
// once and kept, the probabilities never held.
func (rc *Recalibrated) inSampleGains(o Options, fi int) ([]float64, error) {
	if rc.keep == nil {
		gIn, err := rc.inSample(fi)
		if err != nil {
			return nil, err
		}
		in, _, _ := rc.rowGains(o, gIn)
		return in, nil
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ff := &rc.fits[fi]
	if ff.keptIn == nil {
		kept := rc.newKept()
		if err := rc.applyInSample(fi, func(idx []int, out []float64) { rc.keepGains(kept, idx, out) }); err != nil {
			return nil, err
		}
		ff.keptIn = kept
	}
	return ff.keptIn[keyOf(o)], nil
}

// newKept returns a lean fit's empty per-row gains of each kept loss.
func (rc *Recalibrated) newKept() map[lossKey][]float64 {
	out := make(map[lossKey][]float64, len(rc.keep))
	for _, k := range rc.keep {
		out[keyOf(k)] = make([]float64, rc.set.N)
	}
	return out
}

// keepGains writes to kept the gains of the rows idx recalibrated to out
// (len(idx)×K) under each kept loss (canonical notion).
func (rc *Recalibrated) keepGains(kept map[lossKey][]float64, idx []int, out []float64) {
	s := rc.set
	for _, k := range rc.keep {
		o, gains := Options{Loss: k.Loss, P: k.P}, kept[keyOf(k)]
		for j, i := range idx {
			gains[i] = gain(o, s.Probs[i*s.K:(i+1)*s.K], out[j*s.K:(j+1)*s.K], s.Labels[i])
		}
	}
}

// keyOf returns the key of o's loss (o.withLoss's defaults).
func keyOf(o Options) lossKey {
	o.Loss, o.P = cmp.Or(o.Loss, Lp), cmp.Or(o.P, 1)
	return lossKey{o.Loss, o.P}
}

// z95 is the standard normal's 97.5 % quantile.
const z95 = 1.959963984540054

// best returns the estimate of the family chosen among the families'
// results (each from est of its out-of-fold probabilities), with Family
// and Candidates set, and every family's result (the zero Result where its
// fit failed): the families in order (simplest first), a later
// one replacing the current choice only where its per-row gains beat the
// choice's by a significant margin, mean(d) > 1.645 SE(d) for the paired
// differences d_i of the rows' gains (weighted as the estimate). Taking
// the largest estimate outright reads 0.02 on calibrated models (K = 10, n
// = 5,719; the noise of three estimates of the same rows); the paired
// test switches on noise in about 5 % of comparisons.
func (rc *Recalibrated) best(est func(fi int) Result) (Result, []Result) {
	var r Result
	found := false
	cands := make([]Candidate, len(rc.fits))
	each := make([]Result, len(rc.fits))
	for i, f := range rc.fits {
		cands[i] = Candidate{Family: f.name, Value: math.NaN(), Err: f.err}
		if f.err != nil {
			continue
		}
		each[i] = est(i)
		cands[i].Value = each[i].Value
		if !found || rc.beats(each[i].Gains, r.Gains) {
			r, found = each[i], true
			r.Family = f.name
		}
	}
	r.Candidates = cands
	return r, each
}

// beats reports whether the per-row gains a beat b: the weighted mean of
// a_i - b_i above 1.645 times its standard error.
func (rc *Recalibrated) beats(a, b []float64) bool {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	m := rc.summarize(d)
	return m.Value > 1.6448536269514722*m.SE
}

// errorOf returns the estimate of family fi's out-of-fold probabilities
// (o checked).
func (rc *Recalibrated) errorOf(o Options, fi int) Result {
	if kept := rc.fits[fi].kept; kept != nil {
		return rc.summarize(kept[keyOf(o)])
	}
	gains, over, under := rc.rowGains(o, rc.fits[fi].g)
	r := rc.summarize(gains)
	if over != nil {
		r.Over, r.Under = rc.summarize(over).Value, rc.summarize(under).Value
	}
	return r
}

// rowGains returns each row's gain from f to its recalibration g under
// o's loss and notion and, for the top-label and binary notions, the
// gains of g clipped to over- and under-confidence (confidenceClips).
func (rc *Recalibrated) rowGains(o Options, g []float64) (gains, over, under []float64) {
	s := rc.set
	gains = make([]float64, s.N)
	if o.Notion == notion.TopLabel || o.Notion == notion.Binary {
		over, under = make([]float64, s.N), make([]float64, s.N)
	}
	for i := range gains {
		f, g, y := s.Probs[i*s.K:(i+1)*s.K], g[i*s.K:(i+1)*s.K], s.Labels[i]
		if over == nil {
			gains[i] = gain(o, f, g, y)
			continue
		}
		fs, gs, ys := scalar(o.Notion, f, g, y)
		gains[i] = gain1(o, fs, gs, ys)
		lo, hi := confidenceClips(o.Notion, fs, gs)
		over[i], under[i] = gain1(o, fs, lo, ys), gain1(o, fs, hi, ys)
	}
	return gains, over, under
}

// families returns o.Families, or AutoFamilies for nil.
func (o Options) families() []Family {
	if o.Families == nil {
		return AutoFamilies()
	}
	return o.Families
}

// withLoss returns o with the default loss and p set, or an error
// wrapping ErrInput for an unknown loss or a p that is not a finite
// number >= 1.
func (o Options) withLoss() (Options, error) {
	if o.Loss == "" {
		o.Loss = Lp
	}
	if o.P == 0 {
		o.P = 1
	}
	switch {
	case o.Loss != Lp && o.Loss != Log && o.Loss != Brier:
		return o, fmt.Errorf("%w: unknown loss %q (valid: lp, log, brier)", ErrInput, o.Loss)
	case !(o.P >= 1) || math.IsInf(o.P, 0):
		return o, fmt.Errorf("%w: p = %v, want a finite p >= 1", ErrInput, o.P)
	}
	return o, nil
}

// summarize returns the (weighted) mean of the per-row gains, per fold
// and overall, with its standard error and normal interval.
func (rc *Recalibrated) summarize(gains []float64) Result {
	s := rc.set
	r := Result{N: s.N, Folds: rc.folds, PerFold: make([]float64, rc.folds), Gains: gains}
	fw := make([]float64, rc.folds)
	var sw, sg, sg2, w2 float64
	for i, d := range gains {
		w := mathx.Weight(s.Weights, i)
		sw += w
		w2 += w * w
		sg += w * d
		r.PerFold[rc.fold[i]] += w * d
		fw[rc.fold[i]] += w
	}
	r.Value = sg / sw
	for i, d := range gains {
		sg2 += mathx.Weight(s.Weights, i) * (d - r.Value) * (d - r.Value)
	}
	for f := range fw {
		if fw[f] > 0 {
			r.PerFold[f] /= fw[f]
		}
	}
	// The weighted mean's standard error with the effective number of rows
	// (sum w)^2 / sum w^2 (n without weights).
	if neff := sw * sw / w2; neff > 1 {
		r.SE = math.Sqrt(sg2 / sw / (neff - 1))
	}
	r.Z = z95
	r.setEnds()
	return r
}

// foldSalt sets the folds apart from the other uses of the row keys (the
// streamed evaluation's sample of evaluation points).
const foldSalt = 0x76617269_666f6c64 // "varifold"

// RowFold returns the fold (0..folds-1) of a row: rowkey.Fold of its key
// rowkey.Key(seed, y, 1, p, shard, row) (label, probabilities, the
// position of its shard in the stream and its index there; not its
// weight, so that weights scaled by a common factor give the same
// estimate), a function of the row, its place and the seed alone: every
// fold equally likely, rows of equal values spread over the folds,
// independently of how the stream is cut into batches, shards and
// workers.
func RowFold(seed uint64, y int, p []float64, shard int, row int64, folds int) int {
	return rowkey.Fold(rowKey(seed, y, p, shard, row), foldSalt, folds)
}

// rowKey is the row's key for the folds and the stream's samples.
func rowKey(seed uint64, y int, p []float64, shard int, row int64) uint64 {
	return rowkey.Key(seed, y, 1, p, shard, row)
}

// RowFolds returns RowFold of each row of s read as one shard (shard 0,
// row i).
func RowFolds(s *data.Set, folds int, seed uint64) []int {
	out := make([]int, s.N)
	for i := range out {
		out[i] = RowFold(seed, s.Labels[i], s.Probs[i*s.K:(i+1)*s.K], 0, int64(i), folds)
	}
	return out
}

// rows returns the rows idx of s as a set (weights and logits carried).
func rows(s *data.Set, idx []int) *data.Set {
	out := &data.Set{N: len(idx), K: s.K, Binary: s.Binary, File: s.File}
	out.Probs = make([]float64, 0, len(idx)*s.K)
	out.Labels = make([]int, 0, len(idx))
	lk := 0
	if s.Logits != nil {
		lk = len(s.Logits) / s.N
		out.Logits = make([]float64, 0, len(idx)*lk)
	}
	for _, i := range idx {
		out.Probs = append(out.Probs, s.Probs[i*s.K:(i+1)*s.K]...)
		out.Labels = append(out.Labels, s.Labels[i])
		if s.Logits != nil {
			out.Logits = append(out.Logits, s.Logits[i*lk:(i+1)*lk]...)
		}
		if s.Weights != nil {
			out.Weights = append(out.Weights, s.Weights[i])
		}
	}
	return out
}

// withLogits gives a set without logits the log-probabilities as logits
// (their softmax is the probabilities) when the method reads logits.
func withLogits(s *data.Set, m recal.Method) *data.Set {
	if s.Logits != nil || !m.NeedsLogits() {
		return s
	}
	out := *s
	out.Binary = false // K columns of log-probabilities
	out.Logits = make([]float64, len(s.Probs))
	for i, p := range s.Probs {
		out.Logits[i] = math.Log(max(p, minProb))
	}
	return &out
}

// minProb is float32's smallest normal: probmetrics clips the log loss's
// log-probabilities at its log, and log-probabilities for temperature
// scaling likewise.
const minProb = 0x1p-126

// scalar returns the one coordinate a one-dimensional notion reads of a
// row: top-label, that of k = argmax f (probmetrics' TopClassLoss);
// binary, p1; with the outcome 1{y = k}.
func scalar(nt notion.Notion, f, g []float64, y int) (fs, gs, ys float64) {
	k := 1
	if nt == notion.TopLabel {
		k = mathx.Argmax(f)
	}
	if y == k {
		ys = 1
	}
	return f[k], g[k], ys
}

// confidenceClips returns the recalibrated score g clipped to count only
// over-confidence (lo) or only under-confidence (hi): the confidence in
// the predicted class recalibrated down, or up. Top-label: lo = min(g,
// f), hi = max(g, f). Binary, probmetrics' _clip_p_values: for f > 1/2
// the same; for f < 1/2 (class 0 predicted) reversed; at f = 1/2 both f.
func confidenceClips(nt notion.Notion, f, g float64) (lo, hi float64) {
	switch {
	case nt == notion.TopLabel || f > 0.5:
		return min(g, f), max(g, f)
	case f < 0.5:
		return max(g, f), min(g, f)
	}
	return f, f
}

// gain returns l(f, y) - l(g, y) for one row of the canonical notion (f,
// g its K probabilities).
func gain(o Options, f, g []float64, y int) float64 {
	switch o.Loss {
	case Log:
		return -clippedLog(f[y]) + clippedLog(g[y])
	case Brier:
		var lf, lg float64
		for k := range f {
			yk := 0.0
			if k == y {
				yk = 1
			}
			lf += (f[k] - yk) * (f[k] - yk)
			lg += (g[k] - yk) * (g[k] - yk)
		}
		return lf - lg
	}
	// Lp: l(f, y) = 0; CE_i = -l(g, y) = -(<s, y - g> - ||g - f||_p).
	if o.P == 1 {
		// s = -sign(g - f): CE_i = sum_k sign(g_k - f_k) (y_k - f_k).
		v := 0.0
		for k := range f {
			yk := 0.0
			if k == y {
				yk = 1
			}
			v += sign(g[k]-f[k]) * (yk - f[k])
		}
		return v
	}
	norm := 0.0
	for k := range f {
		norm += math.Pow(math.Abs(g[k]-f[k]), o.P)
	}
	norm = math.Pow(norm, 1/o.P)
	if norm == 0 {
		return 0
	}
	dot := 0.0
	for k := range f {
		d := g[k] - f[k]
		yk := 0.0
		if k == y {
			yk = 1
		}
		s := -sign(d) * math.Pow(math.Abs(d), o.P-1) / math.Pow(norm, o.P-1)
		dot += s * (yk - g[k])
	}
	return -(dot - norm)
}

// gain1 is gain for one coordinate: the binary loss of the score f and
// its recalibration g against the outcome y in {0, 1} (the log and Brier
// losses of the pair (1 - x, x)... as probmetrics' binary-as-1d and
// TopClassLoss compute them on the one column).
func gain1(o Options, f, g, y float64) float64 {
	switch o.Loss {
	case Log:
		lf := -(y*clippedLog(f) + (1-y)*clippedLog(1-f))
		lg := -(y*clippedLog(g) + (1-y)*clippedLog(1-g))
		return lf - lg
	case Brier:
		return (f-y)*(f-y) - (g-y)*(g-y)
	}
	d := g - f
	if d == 0 {
		return 0
	}
	return sign(d) * (y - f) // one coordinate: grad |d| = sign(d), whatever p
}

func clippedLog(p float64) float64 { return math.Log(max(p, minProb)) }

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
