package evaluate

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// The parsers below read the list options of `calib eval` (its --metrics,
// --p, --ks-r and --bandwidth) into the fields of Options, so that a
// program that takes the same text takes it by the same rules. Items are
// comma-separated; surrounding spaces and empty items are ignored. Their
// errors wrap ErrOptions and, after its text, start with the option's name
// as calib eval spells it without the dashes ("bandwidth \"x\": want auto
// or a positive number").

// Text holds, as text, the fields of Options that `calib eval` takes as
// lists or names, each as its flag takes it, so that a front end (flags, a
// form, a configuration file) maps onto Options one to one: the other
// fields it sets directly. Parse reads them.
type Text struct {
	P         string // P: ParseP
	Bandwidth string // Bandwidth: ParseBandwidth
	Objective string // Objective: kde.ParseObjective
	Metrics   string // Metrics (and Strict): ParseMetrics; "" leaves them
	Binning   string // Bins.Binning: metric.ParseBinning
	BinRule   string // Bins.Rule: metric.ParseBinRule
	KSR       string // KSR: ParseKSR
}

// Parse sets the fields of o that t holds, checking o.Mode as it goes
// (Notions; "" means all); a list of metrics without "all" sets o.Strict
// too (a named metric that fails fails Evaluate; with all, as without a
// list, it is an entry with an error). With the set s (nil: before the data is read) it
// also checks what depends on the data: o.Mode against the set's columns,
// the KS r against K (CheckKSR). The errors wrap ErrOptions and, after
// its text, start with the option's name as calib eval spells it ("mode:
// unknown notion ...", "binning: unknown binning ...", "bandwidth \"x\":
// want auto or a positive number").
func (t Text) Parse(o *Options, s *data.Set) error {
	var err error
	if _, _, err = Notions(cmp.Or(o.Mode, "all"), s); err != nil {
		if oe := (*OptionError)(nil); errors.As(err, &oe) {
			return optionError("mode", "mode: %w", oe.Err)
		}
		return err
	}
	if o.P, err = ParseP(t.P); err != nil {
		return err
	}
	if o.Bandwidth, err = ParseBandwidth(t.Bandwidth); err != nil {
		return err
	}
	if o.Objective, err = kde.ParseObjective(t.Objective); err != nil {
		return optionError("bandwidth-objective", "bandwidth-objective: %v", err)
	}
	if t.Metrics != "" {
		var all bool
		if o.Metrics, all, err = parseMetrics(t.Metrics); err != nil {
			return err
		}
		o.Strict = !all
	}
	if o.Bins.Binning, err = metric.ParseBinning(t.Binning); err != nil {
		return optionError("binning", "binning: %v", err)
	}
	if o.Bins.Rule, err = metric.ParseBinRule(t.BinRule); err != nil {
		return optionError("bin-rule", "bin-rule: %v", err)
	}
	if o.KSR, err = ParseKSR(t.KSR); err == nil && s != nil {
		err = CheckKSR(*o, s.K)
	}
	return err
}

// ParseMetrics parses a list of metric names (see Metrics), or "all", into
// Options.Metrics: each metric once, in the order of Metrics.
func ParseMetrics(list string) (MetricSet, error) {
	ms, _, err := parseMetrics(list)
	return ms, err
}

// parseMetrics is ParseMetrics that also reports whether the list named
// "all".
func parseMetrics(list string) (ms MetricSet, all bool, err error) {
	seen := map[Metric]bool{}
	for _, f := range strings.Split(list, ",") {
		switch m := Metric(strings.TrimSpace(f)); {
		case m == "":
		case m == "all":
			all = true
			for _, a := range Metrics {
				seen[a] = true
			}
		case slices.Contains(Metrics, m):
			seen[m] = true
		default:
			return nil, false, optionError("metrics", "metrics: unknown metric %q (valid: %s, all)", m, Metrics.words())
		}
	}
	if len(seen) == 0 {
		return nil, false, optionError("metrics", "metrics: no metric given")
	}
	out := MetricSet{}
	for _, m := range Metrics {
		if seen[m] {
			out = append(out, m)
		}
	}
	return out, all, nil
}

// ParseP parses a list of exponents p in [1, kde.MaxP] into Options.P.
func ParseP(list string) ([]float64, error) {
	var ps []float64
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || !(p >= 1 && p <= kde.MaxP) {
			return nil, optionError("p", "p %q: each p must be a number in [1, %d]", f, kde.MaxP)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, optionError("p", "p: no exponent given")
	}
	return ps, nil
}

// ParseKSR parses a list of integers r >= 1 into Options.KSR (the KS top-r
// errors); an empty list gives an empty, non-nil slice: no top-r error.
func ParseKSR(list string) ([]int, error) {
	rs := []int{}
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		r, err := strconv.Atoi(f)
		if err != nil || r < 1 {
			return nil, optionError("ks-r", "ks-r %q: each r must be an integer >= 1", f)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// ParseBandwidth parses "auto" (any case) into 0, Options.Bandwidth's
// choice by leave-one-out likelihood, or a finite h > 0 into h. The error
// reads `bandwidth "x": want auto or a positive number`.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "auto") {
		return 0, nil
	}
	h, err := strconv.ParseFloat(t, 64)
	if err != nil || !(h > 0) || math.IsInf(h, 0) {
		return 0, optionError("bandwidth", "bandwidth %q: want auto or a positive number", s)
	}
	return h, nil
}

// BandwidthNotion parses the mode of a bandwidth selection
// (SelectBandwidth), which must name one notion (see Notions); "" means
// canonical, or binary for one-column input. With s nil (before the data
// is read) it checks the names and their number only, "all" then counting
// as one.
func BandwidthNotion(mode string, s *data.Set) (kde.Notion, error) {
	if mode == "" {
		if s != nil && s.Binary {
			return kde.Binary, nil
		}
		return kde.Canonical, nil
	}
	ns, _, err := Notions(mode, s)
	if err != nil {
		return 0, err
	}
	if len(ns) != 1 {
		return 0, optionError("mode", "bandwidth takes one notion, got %d", len(ns))
	}
	return ns[0], nil
}

// CheckKSR checks the KS r of o against the K of the set they will be
// used on when o asks for ks (the default metrics, or "ks" among o.Metrics): an
// r above K would name no rows. Its error reads "ks-r 4: the predictions
// have K = 3 classes, so r must be at most 3".
func CheckKSR(o Options, k int) error {
	if o.Metrics != nil && !o.Metrics.Has(KS) {
		return nil
	}
	for _, r := range o.KSR {
		if r > k {
			return optionError("ks-r", "ks-r %d: the predictions have K = %d classes, so r must be at most %d", r, k, k)
		}
	}
	return nil
}
