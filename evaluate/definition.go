package evaluate

// define fills the definition keys of e, an entry of metric d: the keys
// that are d's own (the estimator, the kernel, the bin rule and edge rule,
// the cross-fitting seed: d.define), the interval's resamples and seed,
// and whether weights were used. An entry with an error gets only the
// last.
func (c *config) define(d *metricDef, e *Result, weighted bool) {
	e.Weighted = weighted
	if e.Error != "" {
		return
	}
	d.define(c, e)
	if e.CI != nil {
		e.CIResamples, e.CISeed, e.CIExact = ptr(c.boot.Resamples), ptr(c.boot.Seed), c.CIExact
	}
}
