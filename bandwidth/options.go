package bandwidth

import (
	"math"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/optionspec"
)

// Options are the options of a selection as calib bandwidth takes them:
// the notion as written (resolved against the set by the caller, as
// evalflag.BandwidthNotion does) and kde's options.
type Options struct {
	// Mode names one notion: canonical, class_wise, top_label or binary;
	// "" means canonical, or binary for one-column input.
	Mode string
	kde.BandwidthOptions
}

// optionSpecs declares the options of Select as calib bandwidth, the C
// ABI and Python name them.
var optionSpecs = []optionspec.Spec[Options]{
	{Option: optionspec.Option{Name: "mode", Kind: optionspec.Text,
		Usage: "notion: canonical, class_wise (the paper's marginal), top_label or binary (default canonical; binary for one-column input)"},
		Set: func(o *Options, text string) error { o.Mode = text; return nil }},
	{Option: optionspec.Option{Name: "bandwidth-objective", Kind: optionspec.Text, Default: "loo", Usage: "objective: loo or reference"},
		Set: func(o *Options, text string) error {
			obj, err := kde.ParseObjective(text)
			if err != nil {
				return optionspec.Errorf("bandwidth-objective", "bandwidth-objective: %v", err)
			}
			o.Objective = obj
			return nil
		}},
	{Option: optionspec.Option{Name: "no-refine", Kind: optionspec.Bool, Default: "false", ReadBy: []string{"loo"},
		Usage: "loo: return the best grid value without the refinement (Brent's method)"},
		Set: optionspec.SetBool(func(o *Options) *bool { return &o.NoRefine })},
	{Option: optionspec.Option{Name: "workers", Kind: optionspec.Int, Default: "0", Usage: "goroutines (0: all cores)"},
		Set: optionspec.SetInt(0, math.MaxInt32, "an integer >= 0", func(o *Options) *int { return &o.Workers })},
}

// OptionSpecs returns the options of a selection as calib bandwidth names
// them (a copy): mode, bandwidth-objective, no-refine and workers.
func OptionSpecs() []optionspec.Option { return optionspec.Options(optionSpecs) }

// ParseOptions returns the options written as text, keyed by option name
// ("_" may stand for "-"), as calib bandwidth reads its flags: each
// option absent takes its default (optionspec.Parse), and no-refine given
// with the reference objective is refused. Errors are *optionspec.Error
// values naming the option.
func ParseOptions(text map[string]string) (Options, error) {
	var o Options
	given, err := optionspec.Parse(optionSpecs, &o, text)
	if err != nil {
		return o, err
	}
	return o, optionspec.Unread(OptionSpecs(), given, "--bandwidth-objective", []string{o.Objective.String()})
}
