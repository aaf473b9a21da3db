package calibtest

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/calib-dev/calib/internal/pkgerr"
	"github.com/calib-dev/calib/optionspec"
)

// optionSpecs declares the options of Run as calib test, the C ABI and
// Python name them.
var optionSpecs = []optionspec.Spec[Options]{
	{Option: optionspec.Option{Name: "tests", Kind: optionspec.Text,
		Usage: "tests, comma-separated, of " + strings.Join(testNames, ", ") + ", or all (default: " + strings.Join(defaultTests, ",") + ")"},
		Set: setTests},
	{Option: optionspec.Option{Name: "resamples", Kind: optionspec.Int, Default: strconv.Itoa(DefaultResamples), ReadBy: resampledTests,
		Usage: fmt.Sprintf("resamples B of the consistency-resampling tests, at least 1/alpha - 1 (a resampled p-value is at least 1/(B+1)) and at most %d", MaxResamples)},
		Set: optionspec.SetInt(1, MaxResamples, fmt.Sprintf("an integer in [1, %d]", MaxResamples), func(o *Options) *int { return &o.Resamples })},
	{Option: optionspec.Option{Name: "alpha", Kind: optionspec.Float, Default: strconv.FormatFloat(DefaultAlpha, 'g', -1, 64), Usage: "level of the verdicts, in (0, 1)"},
		Set: optionspec.SetFloat(func(x float64) bool { return x > 0 && x < 1 }, "a number strictly between 0 and 1", func(o *Options) *float64 { return &o.Alpha })},
	{Option: optionspec.Option{Name: "seed", Kind: optionspec.Uint64, Default: strconv.Itoa(DefaultSeed),
		Usage: "seed of the resamples and of the SKCE blocks (the default seed of every calib command; 0 means 1)"},
		Set: optionspec.SetUint64(func(o *Options) *uint64 { return &o.Seed })},
	{Option: optionspec.Option{Name: "workers", Kind: optionspec.Int, Default: "0", Usage: "goroutines (0: all cores); results are identical for any value"},
		Set: optionspec.SetInt(0, math.MaxInt32, "an integer >= 0", func(o *Options) *int { return &o.Workers })},
	{Option: optionspec.Option{Name: "max-seconds", Kind: optionspec.Float, Default: strconv.Itoa(DefaultMaxSeconds),
		Usage: "refuse a named test whose run time, estimated from n, K, --resamples and --workers before any test runs, passes this many `seconds` (the default list and all leave such a test out, saying so); 0: no bound"},
		Set: setMaxSeconds},
}

// OptionSpecs returns the options of Run as calib test names them (a
// copy): tests, resamples, alpha, seed, workers and max-seconds.
func OptionSpecs() []optionspec.Option { return optionspec.Options(optionSpecs) }

// ParseOptions returns the options written as text, keyed by option name
// ("_" may stand for "-"), as calib test reads its flags: each option
// absent takes its default (optionspec.Parse); then the resamples must be
// able to reach alpha, the tests must be known (Validate), and resamples
// given while no resampled test runs is refused. Errors are
// *optionspec.Error values naming the option.
func ParseOptions(text map[string]string) (Options, error) {
	var o Options
	given, err := optionspec.Parse(optionSpecs, &o, text)
	if err != nil {
		return o, err
	}
	if B := o.Resamples; B < MinResamples(o.Alpha) {
		return o, optionspec.Errorf("resamples", "resamples %d: a resampled p-value is at least 1/(B+1) = %.3g, so it could never reach --alpha %g; want at least %d resamples", B, 1/float64(B+1), o.Alpha, MinResamples(o.Alpha))
	}
	if err := o.Validate(); err != nil {
		return o, optionspec.Errorf("tests", "tests: %s", pkgerr.Reason(err))
	}
	return o, optionspec.Unread(OptionSpecs(), given, "--tests", o.chosen())
}

// chosen returns the tests o names: DefaultTests for nil, every test for
// "all".
func (o Options) chosen() []string {
	switch {
	case o.Tests == nil:
		return DefaultTests()
	case len(o.Tests) == 1 && o.Tests[0] == "all":
		return Tests()
	}
	return o.Tests
}

// setTests sets Tests from a comma-separated list.
func setTests(o *Options, text string) error {
	o.Tests = []string{}
	for _, t := range strings.Split(text, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.Tests = append(o.Tests, t)
		}
	}
	return nil
}

// setMaxSeconds sets MaxSeconds; 0 means no bound (+Inf).
func setMaxSeconds(o *Options, text string) error {
	if err := optionspec.SetFloat(func(x float64) bool { return x >= 0 }, "a finite number of seconds >= 0 (0: no bound)", func(o *Options) *float64 { return &o.MaxSeconds })(o, text); err != nil {
		return err
	}
	if o.MaxSeconds == 0 {
		o.MaxSeconds = math.Inf(1)
	}
	return nil
}
