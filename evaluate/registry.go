package evaluate

import "slices"

// metricDef is one metric of the table: its name (Options.Metrics, the
// JSON "metric" of its plain entries) and how its entries are computed.
type metricDef struct {
	name    string
	compute func(ev *evaluator) ([]*Result, error)
}

// metricTable is the one place a metric is registered: Metrics (the names
// and the output order) and the dispatch of Evaluate come from it. Each
// entry computes every notion of its metric; the entries carry their group.
var metricTable = []metricDef{
	{"ece_kde", (*evaluator).eceKDE},
	{"ece_witness", (*evaluator).eceWitness},
	{"ece_bin", binnedMetric("ece_bin")},
	{"mce", binnedMetric("mce")},
	{"ece_bin_debiased", binnedMetric("ece_bin_debiased")},
	{"ks", (*evaluator).ks},
	{"sharpness", (*evaluator).sharpness},
	{"mmce", (*evaluator).mmce},
	{"brier", scoreMetric("brier")},
	{"nll", scoreMetric("nll")},
	{"accuracy", scoreMetric("accuracy")},
	{"confidence", scoreMetric("confidence")},
}

// metricNames lists the names of the table in order.
func metricNames() []string {
	names := make([]string, len(metricTable))
	for i, d := range metricTable {
		names[i] = d.name
	}
	return names
}

// Metrics lists the metric names of Options.Metrics, in output order (what
// --metrics all computes).
var Metrics = metricNames()

// DefaultMetrics are the metrics of Options.Metrics nil (calib eval without
// --metrics or --mode), in output order: the numbers to report (README,
// "Which number to report") and the means beside them, each O(n) or, for
// ece_witness, one O(n^2) grid sweep:
//
//   - ece_witness: the converging estimate of the canonical CE_1 (and the
//     debiased U-statistic of CE_2^2),
//   - ece_bin: the binned ECE (top-label, class-wise, canonical),
//   - ks: the KS calibration errors,
//   - brier, nll, accuracy, confidence.
//
// The plug-in ece_kde and sharpness (a leave-one-out bandwidth search and
// kernel regression per notion: most of the cost of all metrics), mce,
// ece_bin_debiased and mmce are one name away ("all", or Metrics).
var DefaultMetrics = []string{"ece_witness", "ece_bin", "ks", "brier", "nll", "accuracy", "confidence"}

// Estimators names the estimator behind each metric name of a Result (the
// "estimator" key); the README defines each.
var estimators = map[string]string{
	"ece_kde":            "plug-in",         // eq. 4 of ece-kde.md with the leave-one-out ratio r_j of eq. 6
	"ece_kde_debiased":   "debiased-ratio",  // the ratio's first-order bias removed (kde/doc.go)
	"ece_bin":            "binned-plug-in",  // sum_b (n_b/n) |acc_b - conf_b|^p
	"mce":                "binned-max",      // max over occupied bins of |acc_b - conf_b|
	"ece_bin_debiased":   "binned-debiased", // Kumar et al.'s debiased L2 (squared, n_b - 1 correction)
	"ks":                 "ks-cumulative",   // max_i |cumulative (y - f) sums| over sorted scores (splines.md eq. 11)
	"sharpness":          "plug-in",         // variance of r_j around its mean (kde.Sharpness)
	"sharpness_debiased": "debiased-ratio",  // the same with the debiased ratio
	"mmce":               "v-statistic",     // Kumar, Sarawagi and Jain 2018, i = j terms included
	"brier":              "mean",            // mean of per-point terms
	"nll":                "mean",
	"accuracy":           "mean",
	"confidence":         "mean",
}

// streamMetrics lists the metrics a stream computes by default: all but
// ece_witness, whose kernel sums are K-vectors at two grids of 13
// bandwidths (about 13 times ece_kde's canonical cost); it is streamed
// when asked for.
var streamMetrics = []string{"ece_kde", "ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "sharpness", "brier", "nll", "accuracy", "confidence"}

// streamable lists every metric a stream can compute.
var streamable = append(slices.Clone(streamMetrics), "ece_witness")

// StreamableMetrics returns every metric a streamed evaluation computes
// (what --metrics all means in a stream); StreamOptions.Metrics nil means
// these but ece_witness.
func StreamableMetrics() []string { return slices.Clone(streamable) }
