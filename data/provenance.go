package data

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// modulePath is calib's module.
const modulePath = "github.com/calib-dev/calib"

// Kind is how s was read: "logits", "binary" (one column, p1) or
// "probabilities".
func (s *Set) Kind() string {
	switch {
	case s.Logits != nil:
		return "logits"
	case s.Binary:
		return "binary"
	}
	return "probabilities"
}

// Provenance says how an output was made: the tool, the command and every
// option (set or default), the inputs and the map applied, so that a
// result can be reproduced. calib puts it under the "provenance" key of
// every JSON output (evaluate.Evaluation.Provenance, compare, report and
// train, the map files, the experiments' results); its keys are part of
// that contract.
type Provenance struct {
	Version string            `json:"calib_version"`
	Command string            `json:"command"`          // e.g. "calib eval"
	Args    []string          `json:"args,omitempty"`   // the positional arguments
	Options map[string]string `json:"options"`          // every flag of the command with its value
	Seed    *uint64           `json:"seed,omitempty"`   // the seed of the bootstrap, splits and folds, where the command has one
	Inputs  []Input           `json:"inputs,omitempty"` // the prediction sets read
	Mapping *Mapping          `json:"calibrator,omitempty"`
}

// Input describes one prediction set as read.
type Input struct {
	Role   string `json:"role,omitempty"` // "test", "val", or "" for the one input
	File   string `json:"file"`
	Labels string `json:"labels,omitempty"` // the labels file, when separate
	// Kind is "logits" (softmax or sigmoid in float64), "probabilities" or
	// "binary" (one column, p1): Set.Kind.
	Kind string `json:"kind"`
	N    int    `json:"n"`
	K    int    `json:"k"`
	// Renormalized and Rounded count rows divided by their sum (see
	// data.Set).
	Renormalized int `json:"renormalized,omitempty"`
	Rounded      int `json:"rounded,omitempty"`
	// WeightSum is the sum of the sample weights, when the set has them.
	WeightSum Float `json:"weight_sum,omitempty"`
}

// Mapping names the recalibration map applied before measuring.
type Mapping struct {
	File   string `json:"file"`
	Method string `json:"method"`
}

// String names the map: "the METHOD map FILE" (evaluate.Evaluation.Calibrated).
func (m *Mapping) String() string { return fmt.Sprintf("the %s map %s", m.Method, m.File) }

// AddInput records the set s, read for role ("test", "val" or "" for the
// one input) with its labels from the file labels ("" when they were in
// the predictions file); a nil p or s records nothing. It returns p.
func (p *Provenance) AddInput(role string, s *Set, labels string) *Provenance {
	if p == nil || s == nil {
		return p
	}
	in := Input{Role: role, File: s.File, Labels: labels, Kind: s.Kind(), N: s.N, K: s.K, Renormalized: s.Renormalized, Rounded: s.Rounded}
	if s.Weights != nil {
		in.WeightSum = Float(s.GivenWeightSum())
	}
	p.Inputs = append(p.Inputs, in)
	return p
}

// Version returns the version of calib in the running program, for
// Provenance.Version: the version of the module github.com/calib-dev/calib
// in the program's build information (the main module when the program is
// calib itself, as built by `go install module@version`, else the
// dependency), "devel" for a development build or none recorded. For the
// main module it is followed by the VCS revision (and "+dirty" for a
// modified tree) when the build recorded one: "devel 0123456789ab+dirty".
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if bi.Main.Path != modulePath {
		v = ""
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				v = d.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if bi.Main.Path != modulePath {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}
