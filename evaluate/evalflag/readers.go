package evalflag

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/calib-dev/calib/evaluate"
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
	"convention":          {evaluate.ECEBin, evaluate.MCE, evaluate.ACE, evaluate.ATB, evaluate.TCE, evaluate.ECESweep, evaluate.SmECE},
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
