package calibtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
)

// DefaultTests returns the tests Run runs when none are named, in report
// order: the cumulative Kolmogorov-Smirnov and Kuiper tests and
// Spiegelhalter's z on the top-label confidence (asymptotic p-values) and
// on every class column (class-wise: ClassWise, consistency resampling of
// the maximum over the classes), and consistency resampling of the
// top-label binned ECE (15 equal-width bins). Every one is a function of
// the data, or a resampled p-value whose Monte Carlo error is at most
// 0.5/sqrt(B) (0.016 at B = 1,000), so the verdict does not hinge on the
// seed; and the score tests of a temperature and of a prior shift
// (temperature_score, prior_score: consistency resampling of Rao's score
// statistics, score.go), which keep their power with many classes. The
// SKCE block test (skce) is not among them: its statistic depends on the
// seeded order of the rows, and on real predictions its p-value spans
// 0.0003 to 0.41 over 40 seeds (TESTS.md).
func DefaultTests() []string { return slices.Clone(defaultTests) }

var defaultTests = []string{"ks", "kuiper", "spiegelhalter", "ece_bin", "temperature_score", "prior_score"}

// Tests returns every test Run knows: DefaultTests, then the SKCE block
// z-test (skce: canonical, blocks of sqrt(n) rows in a seeded order), the
// bootstrap test of the full SKCE U-statistic (skce_u, SKCEBootstrap; n <=
// 4,096), and consistency resampling of ECE^KDE (ece_kde: canonical,
// top-label and class-wise at the LOO bandwidth of each, chosen on the
// predictions), of the top-label KS calibration error (ks_error), of the
// top-label MMCE (mmce) and of the canonical witness estimate
// (ece_witness, p = 1; one kde.Witness per resample: slow).
func Tests() []string { return slices.Clone(testNames) }

var testNames = append(slices.Clone(defaultTests), "skce", "skce_u", "ece_kde", "ks_error", "mmce", "ece_witness")

// ResampledTests returns the tests that draw Options.Resamples resamples: every
// test but skce (a z-test of its blocks).
func ResampledTests() []string { return slices.Clone(resampledTests) }

var resampledTests = slices.DeleteFunc(slices.Clone(testNames), func(t string) bool { return t == "skce" })

// MaxDefaultPriorScoreK is the largest K at which the default list (and
// "all") runs prior_score: its statistic factorizes the K x K covariance of
// the predicted class counts, O(K^3) (measured 4.6 s at K = 1,000, 52 s at
// 3,000 and 285 s at 10,000 for 50 rows); above it the test is skipped,
// saying so, unless named.
const MaxDefaultPriorScoreK = 1000

// ErrInput is wrapped by the errors of Run on input a test does not take
// (weights for the unweighted tests).
var ErrInput = errors.New("calibtest: invalid input")

// ErrTooFew is wrapped by the errors of Run on too few rows for a test.
var ErrTooFew = errors.New("calibtest: too few rows")

// weightedTests are the tests that take sample weights.
var weightedTests = []string{"ks", "kuiper", "spiegelhalter"}

// DefaultSeed is the seed Options.Seed 0 stands for: calib test's --seed
// default, so that the zero Options runs as `calib test` without flags.
const DefaultSeed = 1

// Options configures Run. The zero value runs DefaultTests at alpha 0.05
// with DefaultResamples resamples, seed DefaultSeed, on every core: as
// `calib test` without flags.
type Options struct {
	// Tests names the tests (of Tests); nil means DefaultTests, and
	// {"all"} every test that applies: with weights the weighted ones,
	// skce_u only for n <= MaxBootstrapSamples (the answer says which
	// were skipped).
	Tests     []string
	Alpha     float64 // 0: 0.05
	Resamples int     // consistency resamples; 0: DefaultResamples
	// Seed seeds every resampling test; 0 means DefaultSeed (so seed 0
	// itself cannot be asked for).
	Seed    uint64
	Workers int
	// MaxSeconds bounds each test's estimated run time (EstimateSeconds
	// at the data's n and K, Resamples and Workers), checked before any
	// test runs: a test named in Tests past it is refused (a *CostError
	// naming every such test and its estimate), and the default list and
	// "all" leave such tests out, the answer naming them with their
	// estimates. 0 means DefaultMaxSeconds; +Inf means no bound.
	MaxSeconds float64
}

// Validate checks the options (the test names, alpha, the resamples) without
// data: a CLI calls it before reading any.
func (o Options) Validate() error {
	for i, t := range o.Tests {
		if t == "all" && len(o.Tests) == 1 {
			continue
		}
		if !slices.Contains(testNames, t) {
			return pkgerr.Errorf("calibtest", "unknown test %q (valid: %s)", t, strings.Join(testNames, ", "))
		}
		if slices.Contains(o.Tests[:i], t) {
			return pkgerr.Errorf("calibtest", "test %q listed twice", t)
		}
	}
	if len(o.Tests) == 0 && o.Tests != nil {
		return pkgerr.Errorf("calibtest", "no test named (nil means the default tests)")
	}
	if o.Alpha != 0 && !(o.Alpha > 0 && o.Alpha < 1) {
		return pkgerr.Errorf("calibtest", "alpha %v outside (0, 1)", o.Alpha)
	}
	if math.IsNaN(o.MaxSeconds) || o.MaxSeconds < 0 {
		return pkgerr.Errorf("calibtest", "MaxSeconds %v: want a number of seconds > 0 (0: %d; +Inf: no bound)", o.MaxSeconds, DefaultMaxSeconds)
	}
	if o.Resamples < 0 || o.Resamples > MaxResamples {
		return pkgerr.Errorf("calibtest", "%d resamples: want 1 to %d (0: %d)", o.Resamples, MaxResamples, DefaultResamples)
	}
	// A resampled p-value is at least 1/(B+1): below B = 1/alpha - 1 no
	// resampling test could ever reject.
	if alpha := cmp.Or(o.Alpha, DefaultAlpha); o.Resamples > 0 && o.Resamples < MinResamples(alpha) {
		return pkgerr.Errorf("calibtest", "%d resamples: a resampled p-value is at least 1/(B+1) = %.3g, so it could never reach alpha = %g; want at least %d resamples",
			o.Resamples, 1/float64(o.Resamples+1), alpha, MinResamples(alpha))
	}
	return nil
}

// DefaultAlpha is the level that Options.Alpha 0 stands for.
const DefaultAlpha = 0.05

// MaxResamples bounds Options.Resamples (and calib's --resamples and
// --p-resamples): 10^6 resamples give p-values to +-0.001 at p = 0.5.
const MaxResamples = 1_000_000

// MinResamples is the least number of resamples B at which a resampled
// p-value, at least 1/(B+1), can reach alpha: ceil(1/alpha) - 1.
func MinResamples(alpha float64) int {
	return max(1, int(math.Ceil(1/alpha-1e-12))-1)
}

// Result is one test's outcome. For the class-wise notion of ks, kuiper
// and spiegelhalter Statistic is the largest class statistic, PValue the
// family p-value (the smallest maxT-adjusted p-value over the classes,
// ClassWise) and PerClass the adjusted p-values; the class-wise ece_kde row is one
// consistency test of the marginal ECE^KDE summed over the classes (no
// PerClass).
type Result struct {
	Test      string    `json:"test"`
	Notion    string    `json:"notion"` // package notion's spelling; "-" for a test that could not run before its notions were known
	Statistic float64   `json:"statistic"`
	PValue    float64   `json:"p_value"`
	Method    string    `json:"method"`
	Resamples int       `json:"resamples,omitempty"`
	Reject    bool      `json:"reject"`
	PerClass  []float64 `json:"per_class,omitempty"`
	// Error says why the test could not run on this data (no variance
	// under the null, too few rows); Statistic and PValue are then NaN
	// (null in JSON) and the other tests run.
	Error string `json:"error,omitempty"`
}

// cannotRun reports whether err says a test cannot run on this data
// rather than a failure: the run then records it (Result.Error) and goes
// on.
// reasonError is an error of a kind (ErrTooFew, ErrNoVariance) that says
// its reason in its own words.
type reasonError struct {
	kind error
	msg  string
}

func (e reasonError) Error() string { return e.msg }

// Is reports whether target is the error's kind.
func (e reasonError) Is(target error) bool { return target == e.kind }

func cannotRun(err error) bool { return errors.Is(err, ErrNoVariance) || errors.Is(err, ErrTooFew) }

// notRun is the entry of a test that could not run on this data.
func notRun(test string, nt string, err error) Result {
	return Result{Test: test, Notion: nt, Statistic: math.NaN(), PValue: math.NaN(), Error: strings.ReplaceAll(err.Error(), "calibtest: ", "")}
}

// Report is the outcome of Run: every test, and the plain-language answer.
type Report struct {
	N      int      `json:"n"`
	K      int      `json:"k"`
	Alpha  float64  `json:"alpha"`
	Tests  []Result `json:"tests"`
	Answer string   `json:"answer"`
}

// Run tests the calibration of probs (n×k rows in the simplex) with labels
// (weights nil: all 1; the SKCE and consistency tests take no weights:
// asked for with weights they are an error, and the default list leaves
// them out, saying so in the answer) by the tests of o, and answers at
// level alpha.
func Run(ctx context.Context, probs []float64, labels []int, k int, weights []float64, o Options) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Seed = cmp.Or(o.Seed, DefaultSeed)
	weights, _ = mathx.ScaleWeights(weights) // any finite positive weights: their normalised form's answer
	tests, skipped := expandTests(o.Tests, len(labels), k, weights != nil)
	alpha := cmp.Or(o.Alpha, DefaultAlpha)
	n := len(labels)
	if k < 2 || n == 0 || len(probs) != n*k {
		return nil, fmt.Errorf("calibtest: %d probabilities for %d labels and K = %d", len(probs), n, k)
	}
	tests, skipped, err := withinBound(tests, skipped, o.Tests != nil && !(len(o.Tests) == 1 && o.Tests[0] == "all"), n, k, o)
	if err != nil {
		return nil, err
	}
	rep := &Report{N: n, K: k, Alpha: alpha}
	type memo struct {
		r   *CumulativeResult
		err error
	}
	// The Cumulative of each column (-1: top-label), the class-wise
	// results by test.
	cumulative := map[int]memo{}
	var classWise map[string]*ClassWiseResult
	var classWiseErr error // why the class-wise family could not run
	add := func(r Result) {
		r.Reject = r.PValue <= alpha
		rep.Tests = append(rep.Tests, r)
	}
	for _, t := range tests {
		switch t {
		case "ks", "kuiper", "spiegelhalter":
			method := "asymptotic"
			// stat computes the test on column col (-1: the top-label
			// confidence); ks and kuiper share one Cumulative per column.
			stat := func(col int, s, c []float64) (float64, float64, error) {
				if t == "spiegelhalter" {
					r, err := Spiegelhalter(s, c, weights)
					if err != nil {
						return 0, 0, err
					}
					return r.Z, r.P, nil
				}
				m, ok := cumulative[col]
				if !ok {
					m.r, m.err = Cumulative(s, c, weights)
					cumulative[col] = m
				}
				if m.err != nil {
					return 0, 0, m.err
				}
				if t == "ks" {
					return m.r.KS, m.r.KSP, nil
				}
				return m.r.Kuiper, m.r.KuiperP, nil
			}
			s, c := metric.TopR(probs, labels, k, 1)
			v, p, err := stat(-1, s, c)
			switch {
			case err != nil && cannotRun(err):
				add(notRun(t, string(notion.TopLabel), err))
			case err != nil:
				return nil, fmt.Errorf("%s top_label: %w", t, err)
			default:
				add(Result{Test: t, Notion: string(notion.TopLabel), Statistic: v, PValue: p, Method: method})
			}
			// The class-wise family by consistency resampling with the
			// maxT adjustment: the columns' asymptotic laws fail when
			// most columns hold few events (TESTS.md).
			if classWise == nil {
				// ks, kuiper and spiegelhalter on the same resamples.
				var names []string
				for _, u := range tests {
					if u == "ks" || u == "kuiper" || u == "spiegelhalter" {
						names = append(names, u)
					}
				}
				rs, err := ClassWiseMany(ctx, names, probs, labels, k, weights, ConsistencyOptions{Resamples: o.Resamples, Seed: o.Seed, Workers: o.Workers})
				if err != nil && !cannotRun(err) {
					return nil, fmt.Errorf("class_wise: %w", err)
				}
				classWise = map[string]*ClassWiseResult{}
				classWiseErr = err
				for i, u := range names {
					if err == nil {
						classWise[u] = rs[i]
					}
				}
			}
			if cw := classWise[t]; cw != nil {
				add(Result{Test: t, Notion: string(notion.ClassWise), Statistic: cw.Statistic, PValue: cw.P, Resamples: cw.Resamples,
					Method: "consistency resampling, maxT over the classes (Westfall-Young)", PerClass: cw.Adjusted})
			} else {
				add(notRun(t, string(notion.ClassWise), classWiseErr))
			}
		case "skce":
			if weights != nil {
				return nil, reasonError{ErrInput, "skce takes no weights (the SKCE block test is unweighted; the weighted tests are ks, kuiper and spiegelhalter)"}
			}
			if n < 4 {
				add(notRun(t, string(notion.Canonical), fmt.Errorf("%w: skce: the block test needs at least 4 rows (two blocks of 2), got %d", ErrTooFew, n)))
				continue
			}
			// Blocks of sqrt(n) rows: more power than pairs, and still
			// sqrt(n) independent blocks for the z-test.
			b := min(max(2, int(math.Sqrt(float64(n)))), n/2)
			r, err := SKCE(probs, labels, k, SKCEOptions{Block: b, Seed: o.Seed, Workers: o.Workers, BlockOnly: true})
			if err != nil && cannotRun(err) {
				add(notRun(t, string(notion.Canonical), err))
				continue
			}
			if err != nil {
				return nil, err
			}
			add(Result{Test: "skce", Notion: string(notion.Canonical), Statistic: r.BlockValue, PValue: r.BlockP,
				Method: fmt.Sprintf("block z-test, %d blocks of %d in a seeded row order (its p-value moves with the seed), width %.4g (median heuristic)", r.Blocks, r.Block, r.Width)})
		case "skce_u":
			if weights != nil {
				return nil, reasonError{ErrInput, "skce_u takes no weights (the SKCE bootstrap is unweighted; the weighted tests are ks, kuiper and spiegelhalter)"}
			}
			r, err := SKCEBootstrap(probs, labels, k, SKCEBootstrapOptions{Resamples: o.Resamples, Seed: o.Seed, Workers: o.Workers})
			if err != nil && cannotRun(err) {
				add(notRun(t, string(notion.Canonical), err))
				continue
			}
			if err != nil {
				return nil, err
			}
			add(Result{Test: "skce_u", Notion: string(notion.Canonical), Statistic: r.Statistic, PValue: r.P, Resamples: r.Resamples,
				Method: fmt.Sprintf("bootstrap of the U-statistic (statistic n U/(n-1) - V; SKCE_uq = %.4g), width %.4g (median heuristic)", r.Value, r.Width)})
		default: // consistency resampling
			if weights != nil {
				return nil, reasonError{ErrInput, t + " takes no weights (consistency resampling is unweighted; the weighted tests are ks, kuiper and spiegelhalter)"}
			}
			stats, err := consistencyStatistics(ctx, t, probs, labels, k, o.Workers)
			if err != nil && cannotRun(err) {
				add(notRun(t, "-", err))
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, st := range stats {
				r, err := Consistency(ctx, probs, labels, k, st.stat, ConsistencyOptions{Resamples: o.Resamples, Seed: o.Seed, Workers: o.Workers})
				if err != nil && cannotRun(err) {
					add(notRun(t, string(st.notion), err))
					continue
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", t, st.notion, err)
				}
				add(Result{Test: t, Notion: string(st.notion), Statistic: r.Statistic, PValue: r.P, Method: "consistency resampling" + st.method, Resamples: r.Resamples})
			}
		}
	}
	rep.Answer = answer(rep)
	if skipped != nil {
		rep.Answer += fmt.Sprintf(" (skipped: %s)", strings.Join(skipped, ", "))
	}
	return rep, nil
}

// expandTests returns the tests that Run runs for the names of
// Options.Tests on n rows, with or without weights: nil means
// DefaultTests, {"all"} every test that applies, skipped naming the
// others with the reason; other lists are returned as they are.
func expandTests(names []string, n, k int, weighted bool) (tests, skipped []string) {
	if names != nil && !(len(names) == 1 && names[0] == "all") {
		return names, nil
	}
	all := names != nil
	for _, t := range testNames {
		switch {
		case !all && !slices.Contains(defaultTests, t):
		case weighted && !slices.Contains(weightedTests, t):
			skipped = append(skipped, t+" (takes no weights)")
		case t == "skce" && n < 4:
			skipped = append(skipped, "skce (n < 4)")
		case t == "skce_u" && n > MaxBootstrapSamples:
			skipped = append(skipped, fmt.Sprintf("skce_u (n > %d)", MaxBootstrapSamples))
		case t == "prior_score" && k > MaxDefaultPriorScoreK:
			skipped = append(skipped, fmt.Sprintf("prior_score (K > %d: its K x K covariance costs O(K^3) per fit, about 5 s at K = 1,000 and 5 to 10 min at K = 10,000; name it, with a --max-seconds past its estimate, to run it)", MaxDefaultPriorScoreK))
		default:
			tests = append(tests, t)
		}
	}
	return tests, skipped
}

// notionStatistic is one statistic of a consistency test and its notion.
type notionStatistic struct {
	notion notion.Notion
	method string
	stat   Statistic
}

// consistencyStatistics returns the statistics of the consistency test t
// (ece_bin, ece_kde, ks_error, mmce, ece_witness).
func consistencyStatistics(ctx context.Context, t string, probs []float64, labels []int, k, workers int) ([]notionStatistic, error) {
	one := func(nt notion.Notion, st Statistic, err error) ([]notionStatistic, error) {
		if err != nil {
			return nil, err
		}
		return []notionStatistic{{notion: nt, stat: st}}, nil
	}
	switch t {
	case "ece_bin":
		st, err := BinnedECEStatistic(probs, k, 1, metric.BinOptions{}, workers)
		return one(notion.TopLabel, st, err)
	case "ks_error":
		st, err := KSErrorStatistic(probs, k, workers)
		return one(notion.TopLabel, st, err)
	case "mmce":
		st, err := MMCEStatistic(probs, k, 0, workers)
		return one(notion.TopLabel, st, err)
	case "ece_witness":
		st, err := WitnessStatistic(ctx, probs, k, 1, kde.WitnessOptions{Workers: workers})
		return one(notion.Canonical, st, err)
	case "temperature_score":
		st, err := TemperatureScoreStatistic(probs, k, workers)
		return one(notion.Canonical, st, err)
	case "prior_score":
		st, err := PriorScoreStatistic(probs, k, workers)
		return one(notion.Canonical, st, err)
	case "ece_kde":
		var out []notionStatistic
		for _, nt := range []kde.Notion{kde.Canonical, kde.TopLabel, kde.ClassWise} {
			// The LOO objective is the density of the predictions: the
			// labels do not enter it.
			cv, err := kde.SelectBandwidth(ctx, nt, probs, make([]int, len(labels)), k, nil, kde.BandwidthOptions{Workers: workers})
			if err != nil {
				return nil, fmt.Errorf("ece_kde %s: %w", nt, err)
			}
			st, err := ECEKDEStatistic(ctx, nt, probs, k, nil, kde.Options{Bandwidth: cv.Bandwidth, Workers: workers})
			if err != nil {
				return nil, fmt.Errorf("ece_kde %s: %w", nt, err)
			}
			out = append(out, notionStatistic{notion: nt, method: fmt.Sprintf(", h = %.4g (LOO on the predictions)", cv.Bandwidth), stat: st})
		}
		return out, nil
	}
	return nil, fmt.Errorf("calibtest: unknown test %q", t)
}

// answer is the one-line plain-language verdict.
func answer(r *Report) string {
	if len(r.Tests) == 0 {
		return "no test was run"
	}
	var best *Result
	var rejected, notRun []string
	for i, t := range r.Tests {
		if t.Error != "" {
			notRun = append(notRun, t.Test+" ("+t.Notion+")")
			continue
		}
		if best == nil || t.PValue < best.PValue {
			best = &r.Tests[i]
		}
		if t.Reject {
			rejected = append(rejected, t.Test+" ("+t.Notion+")")
		}
	}
	skipped := ""
	if len(notRun) > 0 {
		skipped = fmt.Sprintf("; %s could not run on this data (the table says why)", strings.Join(notRun, ", "))
	}
	level := fmt.Sprintf("%g %%", 100*r.Alpha)
	switch {
	case best == nil:
		return "no test could run on this data: " + strings.Join(notRun, ", ") + " (the table says why)"
	case len(rejected) == 0:
		return fmt.Sprintf("no evidence of miscalibration at the %s level for any notion; the smallest p-value is %.3g (%s, %s)%s", level, best.PValue, best.Test, best.Notion, skipped)
	}
	return fmt.Sprintf("miscalibrated at the %s level: %s reject (smallest p-value %.3g, %s, %s); each test holds its own level, not the family's%s", level, strings.Join(rejected, ", "), best.PValue, best.Test, best.Notion, skipped)
}

// WriteJSON writes the report as one JSON object (NaN p-values and
// infinite statistics as null).
func (r *Report) WriteJSON(w io.Writer) error {
	type res struct {
		Result
		Statistic *float64   `json:"statistic"` // null when infinite (prior_score: a label of a class without mass)
		PValue    *float64   `json:"p_value"`
		PerClass  []*float64 `json:"per_class,omitempty"`
	}
	out := struct {
		*Report
		Tests []res `json:"tests"`
	}{Report: r}
	for _, t := range r.Tests {
		x := res{Result: t}
		if !math.IsNaN(t.Statistic) && !math.IsInf(t.Statistic, 0) {
			x.Statistic = &t.Statistic
		}
		if !math.IsNaN(t.PValue) {
			x.PValue = &t.PValue
		}
		for i := range t.PerClass {
			var p *float64
			if !math.IsNaN(t.PerClass[i]) {
				p = &t.PerClass[i]
			}
			x.PerClass = append(x.PerClass, p)
		}
		out.Tests = append(out.Tests, x)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the report as a table and the answer.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "test\tnotion\tstatistic\tp-value\treject at %g\tmethod\n", r.Alpha)
	for _, t := range r.Tests {
		res := ""
		if t.Resamples > 0 {
			res = fmt.Sprintf(", %d resamples", t.Resamples)
		}
		if t.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\tcannot run: %s\n", t.Test, t.Notion, t.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.6g\t%.4g\t%v\t%s%s\n", t.Test, t.Notion, t.Statistic, t.PValue, t.Reject, t.Method, res)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s (n = %d, K = %d)\n", r.Answer, r.N, r.K)
	return err
}
