package evaluate

import (
	"slices"
	"strings"
)

// parseMetrics parses a list of metric names (see Metrics), or "all",
// into each metric once, in the order of Metrics. Items are
// comma-separated; surrounding spaces and empty items are ignored.
func parseMetrics(list string) (MetricSet, error) {
	seen := map[Metric]bool{}
	for _, f := range strings.Split(list, ",") {
		switch m := Metric(strings.TrimSpace(f)); {
		case m == "":
		case m == "all":
			for _, a := range Metrics {
				seen[a] = true
			}
		case slices.Contains(Metrics, m):
			seen[m] = true
		default:
			return nil, optionError("metrics", "metrics: unknown metric %q (valid: %s, all)", m, Metrics.words())
		}
	}
	if len(seen) == 0 {
		return nil, optionError("metrics", "metrics: no metric given")
	}
	out := MetricSet{}
	for _, m := range Metrics {
		if seen[m] {
			out = append(out, m)
		}
	}
	return out, nil
}

// CheckK checks the options that depend on the number of classes K of the
// set they will be used on: the KS r when o asks for ks (the default
// metrics, or "ks" among o.Metrics), since an r above K would name no rows.
// Its error reads "ks-r 4: the predictions have K = 3 classes, so r must be
// at most 3". Evaluate leaves such entries out instead.
func (o Options) CheckK(k int) error {
	if o.Metrics != nil && !o.Metrics.Has(KS) {
		return nil
	}
	return o.KS.checkK(k)
}
