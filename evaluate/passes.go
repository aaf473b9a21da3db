package evaluate

// SecondPassMetrics returns the metrics of the sums' configuration that
// need the second pass (KernelSums: ece_variational's gains, the kernel
// sums at sampled points, the scores near data-dependent bin edges), in
// the table's order; nil where KernelPass is false. The others finish
// after the first pass alone.
func (s *Sums) SecondPassMetrics() MetricSet {
	var out MetricSet
	for _, d := range metricTable {
		if !s.st.Config.asks(d) {
			continue
		}
		for _, p := range d.sums {
			if p.secondPass != nil && p.secondPass(s.st.Config) {
				out = append(out, d.name)
				break
			}
		}
	}
	return out
}
