package evaluate

// Validate checks o without a prediction set: it returns the error that
// Evaluate would return for o whatever the data (an unknown metric or
// notion, p outside [1, kde.MaxP], a bandwidth that is not finite, too few
// resamples, ...), wrapping ErrOptions, or nil. The checks that need the
// set (a notion that does not fit its shape, a KS r above K) are left to
// Evaluate.
func (o Options) Validate() error {
	_, err := o.resolve(nil)
	return err
}
