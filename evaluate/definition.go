package evaluate

import (
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// define fills the definition keys of e: the estimator, the kernel, the
// bin rule and edge rule, the interval's resamples and seed, the
// cross-fitting seed and whether weights were used.
func (c *config) define(e *Result, s *data.Set) {
	e.Weighted = s.Weights != nil
	if e.Error != "" {
		return
	}
	e.Estimator = estimators[e.Metric]
	switch e.Metric {
	case "ece_kde", "ece_kde_debiased", "sharpness", "sharpness_debiased":
		e.Kernel = "beta"
		if e.Notion == kde.Canonical.String() {
			e.Kernel = "dirichlet"
		}
	case "ece_witness":
		e.Kernel, e.Estimator, e.Seed = "dirichlet", "witness-crossfit", ptr(c.boot.Seed)
		if e.P != nil && *e.P == 2 {
			e.Estimator = "u-statistic"
		}
	case "mmce":
		e.Kernel = "laplacian"
	case "ece_bin", "mce", "ece_bin_debiased":
		e.BinRule = c.bin.Rule.String()
		e.BinEdges = "(lo, hi], first bin [0, hi]"
		if c.bin.OpenLow {
			e.BinEdges = "(lo, hi], a score of 0 in no bin"
		}
		if e.Notion == "canonical" { // cells of the equal-width grid, fixed B
			e.BinRule = metric.Fixed.String()
		}
	}
	if e.CI != nil {
		e.CIResamples, e.CISeed, e.CIExact = ptr(c.boot.Resamples), ptr(c.boot.Seed), c.CIExact
	}
}
