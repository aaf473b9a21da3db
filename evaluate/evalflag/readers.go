package evalflag

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/smooth"
)

// Readers names, for each option that configures some metrics only, the
// metrics that read it: given while none of them is computed, the option
// would be ignored without a word, so Unread refuses it. One table for
// every front end (calib eval, calib-beam, the C ABI and Python through
// them).
//
// Measured by running every metric with and without each option on one
// set and listing the metrics whose entries changed (--seed is read by
// the bootstrap and the p-values too, whatever the metrics, and is not
// here).
var Readers = map[string]evaluate.MetricSet{
	"mode": {evaluate.ECEKDE, evaluate.SmECE, evaluate.ECEVariational},
	"p": {evaluate.ECEKDE, evaluate.ECEWitness, evaluate.ECEBin, evaluate.ECESweep, evaluate.ATB, evaluate.ACE,
		evaluate.ECEVariational},
	"bins":                {evaluate.ECEBin, evaluate.MCE, evaluate.ECEBinDebiased},
	"binning":             {evaluate.ECEBin, evaluate.MCE, evaluate.ECEBinDebiased},
	"bin-rule":            {evaluate.ECEBin, evaluate.MCE, evaluate.ECEBinDebiased},
	"reference-bins":      {evaluate.ECEBin, evaluate.MCE, evaluate.ECEBinDebiased},
	"ace-bins":            {evaluate.ACE},
	"bandwidth":           {evaluate.ECEKDE, evaluate.Sharpness},
	"bandwidth-objective": {evaluate.ECEKDE, evaluate.Sharpness},
	"class-mean":          {evaluate.ECEKDE},
	"convention":          {evaluate.ECEBin, evaluate.MCE, evaluate.ECESweep, evaluate.SmECE}, // ece_sweep and smece for some values only: Conflicts
	"p-values":            {evaluate.ECEKDE, evaluate.ECEBin, evaluate.MCE, evaluate.ECEBinDebiased, evaluate.KS, evaluate.MMCE},
	"eval-points":         {evaluate.ECEKDE, evaluate.ECEWitness, evaluate.MMCE, evaluate.Sharpness},
	"eval-blocks":         {evaluate.ECEKDE, evaluate.ECEWitness, evaluate.MMCE, evaluate.Sharpness},
	"ks-cells":            {evaluate.KS},
	"max-cells":           {evaluate.ECEBin, evaluate.MCE},
	"debias":              {evaluate.ECEKDE, evaluate.Sharpness},
	"exact":               {evaluate.ECEKDE, evaluate.Sharpness},
	"ks-r":                {evaluate.KS},
	"mmce-width":          {evaluate.MMCE},
	"smece-sigma":         {evaluate.SmECE},
	"variational-family":  {evaluate.ECEVariational},
}

// Unread returns an OptionError for the first option (in name order)
// that given reports as given and that no metric of ms (nil:
// evaluate.DefaultMetrics, a stream's too) reads (Readers); nil if every
// given option is read.
func Unread(given func(name string) bool, ms evaluate.MetricSet) error {
	if ms == nil {
		ms = evaluate.DefaultMetrics
	}
	names := make([]string, 0, len(Readers))
	for name := range Readers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		readers := Readers[name]
		if !given(name) || slices.ContainsFunc(readers, ms.Has) {
			continue
		}
		words := make([]string, len(readers))
		for i, m := range readers {
			words[i] = string(m)
		}
		return &evaluate.OptionError{Option: name, Err: fmt.Errorf("%s applies to %s, and none is computed (metrics: %s): add one to the metrics or leave the option out",
			name, strings.Join(words, ", "), ms)}
	}
	return nil
}

// Conflicts returns an OptionError for an option that given reports as
// given and that the values of the other options (o, parsed) leave unread
// although a metric that reads it is computed: --class-mean without the
// class_wise notion, --exact with only the canonical notion and no
// sharpness, --bandwidth-objective with a fixed bandwidth, and a
// --convention that only ece_sweep (robustness_metrics) or smece
// (relplot-1.0.1) read without them. ms is o's metrics (nil:
// evaluate.DefaultMetrics); explicitMode says whether the notions were
// given (else ece_kde's are all that apply).
func Conflicts(given func(name string) bool, o evaluate.Options, ms evaluate.MetricSet, explicitMode bool) error {
	if ms == nil {
		ms = evaluate.DefaultMetrics
	}
	// Exactly "all" counts as every notion (which ones it holds depends on
	// K and on streaming); with names besides it, the names count.
	has := func(n kde.Notion) bool {
		return !explicitMode || o.Mode.Has(n) || (o.Mode.All && len(o.Mode.Notions) == 0)
	}
	switch {
	case given("class-mean") && explicitMode && !has(kde.ClassWise):
		return &evaluate.OptionError{Option: "class-mean", Err: fmt.Errorf("class-mean applies to ece_kde's class_wise notion, which --mode %s leaves out", o.Mode)}
	case given("exact") && explicitMode && !has(kde.TopLabel) && !has(kde.Binary) && !has(kde.ClassWise) && !ms.Has(evaluate.Sharpness):
		return &evaluate.OptionError{Option: "exact", Err: fmt.Errorf("exact applies to the one-dimensional notions (top_label, binary, class_wise) and sharpness; --mode %s computes the canonical notion only", o.Mode)}
	case given("bandwidth-objective") && o.Bandwidth != 0:
		return &evaluate.OptionError{Option: "bandwidth-objective", Err: fmt.Errorf("bandwidth-objective chooses the bandwidth, which --bandwidth %s fixes", o.Bandwidth)}
	}
	if given("convention") && !ms.Has(evaluate.ECEBin) && !ms.Has(evaluate.MCE) {
		sweep := o.Convention == "robustness_metrics" && ms.Has(evaluate.ECESweep)
		sm := o.SmECE.Convention == smooth.Relplot101 && ms.Has(evaluate.SmECE)
		if !sweep && !sm {
			return &evaluate.OptionError{Option: "convention", Err: fmt.Errorf("convention %s applies to ece_bin and mce (robustness_metrics to ece_sweep too, relplot-1.0.1 to smece), and none is computed (metrics: %s)", o.Convention, ms)}
		}
	}
	return nil
}
