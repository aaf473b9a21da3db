package evaluate

import (
	"slices"
	"strings"

	"github.com/calib-dev/calib/metric"
)

// Metric names a metric: an element of Options.Metrics and the "metric" key
// of a Result. docs/metrics.md defines each.
type Metric string

// The metrics of Options.Metrics, in output order (Metrics), and the two
// names that only Results carry (ECEKDEDebiased, SharpnessDebiased: the
// variants Options.Debias adds to ECEKDE and Sharpness).
const (
	ECEKDE            Metric = "ece_kde"            // plug-in ECE^KDE, eq. 4 of ece-kde.md, per notion
	ECEKDEDebiased    Metric = "ece_kde_debiased"   // ECEKDE with the debiased ratio (a Result of ECEKDE)
	ECEWitness        Metric = "ece_witness"        // the converging canonical CE_1 and CE_2^2 (kde.Witness)
	SmECE             Metric = "smece"              // smooth ECE of Błasiok and Nakkiran, relplot 1.0.3's (package smooth)
	ECEBin            Metric = "ece_bin"            // binned ECE: sum_b (n_b/n) |acc_b - conf_b|^p
	MCE               Metric = "mce"                // binned maximum: max_b |acc_b - conf_b|
	ECESweep          Metric = "ece_sweep"          // the monotonic-sweep ECE of Roelofs et al. (metric.SweepECE)
	ATB               Metric = "atb"                // the averaged two-bin error of Hartline, Hu and Wu (metric.ATB)
	ATBDebiased       Metric = "atb_debiased"       // ATB_2 less its expectation under calibration (a Result of ATB)
	TCE               Metric = "tce"                // the test-based calibration error of Matsubara et al. (metric.TCE)
	ACE               Metric = "ace"                // "ACE" in robustness_metrics', torch-uncertainty's and netcal's meanings (convention)
	ECEVariational    Metric = "ece_variational"    // the cross-fitted gain of a recalibration family (package variational)
	ECEBinDebiased    Metric = "ece_bin_debiased"   // Kumar et al.'s debiased binned L2 error
	KS                Metric = "ks"                 // KS calibration error, splines.md eq. 11
	Sharpness         Metric = "sharpness"          // variance of E[y | f] (kde.Sharpness)
	SharpnessDebiased Metric = "sharpness_debiased" // Sharpness with the debiased ratio (a Result of Sharpness)
	MMCE              Metric = "mmce"               // maximum mean calibration error, Laplacian kernel
	Brier             Metric = "brier"              // mean of sum_k (f_k - y_k)^2
	NLL               Metric = "nll"                // mean of -log f_y
	Accuracy          Metric = "accuracy"           // mean of [argmax f = y]
	Confidence        Metric = "confidence"         // mean of max_k f_k
)

// String returns the metric's name.
func (m Metric) String() string { return string(m) }

// MarshalText implements encoding.TextMarshaler.
func (m Metric) MarshalText() ([]byte, error) { return []byte(m), nil }

// resultOnly are the metrics only Results carry: the variants a metric of
// Metrics adds to its entries.
var resultOnly = MetricSet{ECEKDEDebiased, SharpnessDebiased, ATBDebiased}

// UnmarshalText implements encoding.TextUnmarshaler: a name of Metrics, or
// of the variants only Results carry (ece_kde_debiased,
// sharpness_debiased, atb_debiased), surrounding spaces ignored; other
// names are refused, listing the valid ones (MetricSet takes Metrics
// only).
func (m *Metric) UnmarshalText(b []byte) error {
	v := Metric(strings.TrimSpace(string(b)))
	if !slices.Contains(Metrics, v) && !resultOnly.Has(v) {
		return optionError("metrics", "metrics: unknown metric %q (valid: %s, all)", v, Metrics.words())
	}
	*m = v
	return nil
}

// MetricSet is a list of metrics (Options.Metrics). Its text form is the
// names, comma-separated, or "all" (every metric of Metrics).
type MetricSet []Metric

// String returns the names, comma-separated.
func (ms MetricSet) String() string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	return strings.Join(names, ",")
}

// words returns the names separated by ", ", for messages.
func (ms MetricSet) words() string { return strings.ReplaceAll(ms.String(), ",", ", ") }

// MarshalText implements encoding.TextMarshaler: the names, comma-separated.
func (ms MetricSet) MarshalText() ([]byte, error) { return []byte(ms.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: metric names,
// comma-separated, or "all"; each metric once, in the order of Metrics
// (surrounding spaces and empty items ignored). Its errors are
// OptionErrors of "metrics".
func (ms *MetricSet) UnmarshalText(b []byte) error {
	v, err := parseMetrics(string(b))
	if err != nil {
		return err
	}
	*ms = v
	return nil
}

// Has reports whether m is in the set.
func (ms MetricSet) Has(m Metric) bool { return slices.Contains(ms, m) }

// metricDef is one metric of the table: everything Evaluate, the
// intervals, the p-values, the definition keys and a stream need to know
// of it, each part written in the metric's own file.
type metricDef struct {
	name Metric
	// compute computes every entry of the metric on the set in memory,
	// recording with ev.setStat how each is recomputed on a bootstrap
	// resample (its output group follows from its notion: Result.group).
	compute func(ev *evaluator) ([]*Result, error)
	// interval is the bootstrap interval of the metric's entries (exact:
	// Options.CIExact); see Options.CI.
	interval func(exact bool) metric.IntervalMethod
	// pValues, if not nil, attaches to the entries the p-values of the
	// tests of calibration whose statistics they are (Options.PValues).
	pValues func(ev *evaluator, d *metricDef, entries []*Result) error
	// define sets the definition keys that are the metric's own: the
	// estimator, and the kernel, bin rules or seed where it has them.
	define func(c *config, e *Result)
	// sums are the metric's parts of a stream's first pass (sumsPart);
	// metrics that share sums name the same part.
	sums []*sumsPart
	// configure sets the metric's own fields of a stream's configuration
	// from the options (after the shared ones, P and Level included), for
	// every stream: a state holds them whatever its metrics. nil: none.
	configure func(c *streamConfig, o StreamOptions) error
	// kernel are the metric's parts of a stream's second pass
	// (kernelPart); metrics that share sums name the same part.
	kernel []*kernelPart
	// variant, if not nil, tells apart the entries of one notion and p
	// (Key.Variant).
	variant func(e *Result) string
	// check checks the metric's own options (its field of Options) and
	// fills their defaults; nil: it has none. Evaluate and a stream run
	// every metric's check, asked for or not, so that a bad option is
	// refused whatever the metrics.
	check func(o *Options) error
	// finish reports the metric from a stream's sums; nil: it is not
	// streamed.
	finish func(s *Sums, ks *KernelSums, out *Evaluation) ([]*Result, error)
	// options are the metric's own options (OptionSpecs): its flags, keys
	// and keywords; an option several metrics read is declared by one of
	// them and names the others in its Metrics.
	options []Option
}

// metricTable is the one place a metric is registered: Metrics (the names
// and the output order), the dispatch of Evaluate and Finish, the
// intervals, p-values, definition keys and a stream's parts come from it.
// Adding a metric is its file (its metricDef, its options with their
// check, its keys, its parts of a stream's two passes and configuration,
// each with its state struct) and one row here, plus one line for each
// struct it adds to the shared ones: its field of Options, its keys'
// embed in Result, its states' and configuration's embeds in sumsState,
// kernelSumsState and streamConfig (TestDriversNameNoMetricField keeps the
// rest of its stream code in its file); and its flag (package evalflag).
var metricTable = []*metricDef{
	&variationalDef, // the Headline's metric first
	&eceKDEDef,
	&witnessDef,
	&smeceDef,
	&eceBinDef,
	&mceDef,
	&eceSweepDef,
	&atbDef,
	&tceDef,
	&aceDef,
	&eceBinDebiasedDef,
	&ksDef,
	&sharpnessDef,
	&mmceDef,
	&brierDef,
	&nllDef,
	&accuracyDef,
	&confidenceDef,
}

// lookupDef returns the table's metric m (nil when m is not one).
func lookupDef(m Metric) *metricDef {
	for _, d := range metricTable {
		if d.name == m {
			return d
		}
	}
	return nil
}

// variantOf maps a metric to its metricDef.variant (filled from the table
// at start-up: Key reads it, and the table's functions call Key).
var variantOf = map[Metric]func(e *Result) string{}

func init() {
	for _, d := range metricTable {
		if d.variant != nil {
			variantOf[d.name] = d.variant
		}
	}
}

// checkMetrics runs every metric's check on o, in the table's order.
func (o *Options) checkMetrics() error {
	for _, d := range metricTable {
		if d.check != nil {
			if err := d.check(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// tableNames lists the metrics of the table for which keep holds, in order.
func tableNames(keep func(d *metricDef) bool) MetricSet {
	var names MetricSet
	for _, d := range metricTable {
		if keep(d) {
			names = append(names, d.name)
		}
	}
	return names
}

// Metrics lists the metrics of Options.Metrics, in output order (what
// --metrics all computes).
var Metrics = tableNames(func(*metricDef) bool { return true })

// DefaultMetrics are the metrics of Options.Metrics nil (calib eval without
// --metrics or --mode), in output order: the number to report first
// (Headline's metric), then the numbers to compare it with, each O(n) but
// the first:
//
//   - ece_variational: the canonical entries alone (Headline: CE_1 with
//     its interval; CE_2^2 by the Brier score; the log loss's KL part),
//     three recalibration families cross-fitted on 5 folds,
//   - smece: the smooth ECE at its fixed point (relplot 1.0.3's smECE;
//     top-label, class-wise where ece_kde's notions include it),
//   - ece_bin: the binned ECE (top-label: PaperNumber; class-wise; the
//     canonical cells where they hold at least 10 samples on average,
//     else left out as meaningless),
//   - ks: the KS calibration errors,
//   - brier, nll, accuracy, confidence.
//
// ece_witness (below the truth from K = 10), the plug-in ece_kde and
// sharpness (a leave-one-out bandwidth search and kernel regression per
// notion), mce, ece_sweep, atb, tce, ace, ece_bin_debiased and mmce are
// one name away ("all", or Metrics).
var DefaultMetrics = MetricSet{Headline.Metric, SmECE, ECEBin, KS, Brier, NLL, Accuracy, Confidence}

// streamMetrics lists the metrics a stream computes by default: those of
// DefaultMetrics, all streamed.
var streamMetrics = tableNames(func(d *metricDef) bool { return d.finish != nil && DefaultMetrics.Has(d.name) })

// streamable lists every metric a stream can compute.
var streamable = tableNames(func(d *metricDef) bool { return d.finish != nil })

// StreamableMetrics returns every metric a streamed evaluation computes
// (what --metrics all means in a stream); StreamOptions.Metrics nil means
// those of DefaultMetrics among them.
func StreamableMetrics() MetricSet { return slices.Clone(streamable) }

// centered and percentile are the interval rules of metricDef.interval
// that do not depend on --ci-exact.
func centered(bool) metric.IntervalMethod   { return metric.Centered }
func percentile(bool) metric.IntervalMethod { return metric.Percentile }
