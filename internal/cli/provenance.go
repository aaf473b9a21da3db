package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/internal/mathx"
)

// provenance says how a JSON output was made: the tool, the command and
// every option (set or default), so that a result can be reproduced.
type provenance struct {
	Version string            `json:"calib_version"`
	Command string            `json:"command"`          // e.g. "calib eval"
	Args    []string          `json:"args,omitempty"`   // the positional arguments
	Options map[string]string `json:"options"`          // every flag of the command with its value
	Seed    *uint64           `json:"seed,omitempty"`   // the seed of the bootstrap, splits and folds, where the command has one
	Inputs  []inputInfo       `json:"inputs,omitempty"` // the prediction sets read
	Mapping *mapInfo          `json:"calibrator,omitempty"`
}

// inputInfo describes one prediction set as read.
type inputInfo struct {
	Role   string `json:"role,omitempty"` // "test", "val", or "" for the one input
	File   string `json:"file"`
	Labels string `json:"labels,omitempty"` // the labels file, when separate
	// Kind is "logits" (softmax or sigmoid in float64), "probabilities" or
	// "binary" (one column, p1).
	Kind string `json:"kind"`
	N    int    `json:"n"`
	K    int    `json:"k"`
	// Renormalized and Rounded count rows divided by their sum (see
	// data.Set).
	Renormalized int `json:"renormalized,omitempty"`
	Rounded      int `json:"rounded,omitempty"`
	// WeightSum is the sum of the sample weights, when the set has them.
	WeightSum float64 `json:"weight_sum,omitempty"`
}

// mapInfo names the recalibration map applied before measuring.
type mapInfo struct {
	File   string `json:"file"`
	Method string `json:"method"`
}

// newProvenance records cmd, its arguments and its flags.
func newProvenance(cmd *cobra.Command, args []string) *provenance {
	p := &provenance{Version: Version(), Command: cmd.CommandPath(), Args: args, Options: map[string]string{}}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		p.Options[f.Name] = f.Value.String()
	})
	if f := cmd.Flags().Lookup("seed"); f != nil {
		if v, err := cmd.Flags().GetUint64("seed"); err == nil {
			p.Seed = &v
		}
	}
	return p
}

// input adds a prediction set read for role.
func (p *provenance) input(role string, s *data.Set, labels string) {
	if p == nil || s == nil {
		return
	}
	info := inputInfo{Role: role, File: s.File, Labels: labels, Kind: evaluate.InputKind(s), N: s.N, K: s.K, Renormalized: s.Renormalized, Rounded: s.Rounded}
	if s.Weights != nil {
		info.WeightSum = mathx.WeightSum(s.Weights, s.N)
	}
	p.Inputs = append(p.Inputs, info)
}
