// Package notion names calib's notions of calibration, one spelling each:
// the "notion" of every result (evaluate.Result, evaluate.Key), of the
// ECE^KDE estimators (kde.Notion's names) and of the tests. Earlier
// spellings are read on input: "marginal" (the ECE^KDE paper's name, and
// calib's for ece_kde before the evaluation document's version 2) is
// class_wise, "toplabel" is top_label; any case, '-' for '_'.
package notion

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calib-dev/calib/internal/textenum"
)

// Notion is a notion of calibration: which conditional expectation a
// prediction is compared with.
type Notion string

// The notions, in the order calib lists them.
const (
	// Canonical compares the whole probability vector f with E[y | f].
	Canonical Notion = "canonical"
	// ClassWise compares each class column f_k with P(y = k | f_k) (the
	// ECE^KDE paper's "marginal").
	ClassWise Notion = "class_wise"
	// TopLabel compares the confidence max_k f_k with the accuracy
	// P(y = argmax f | max f).
	TopLabel Notion = "top_label"
	// TopR compares the sum of the r largest probabilities with the
	// probability that the label is among them (KS's top-r).
	TopR Notion = "top_r"
	// WithinTopR compares, among the r largest, the probability of the
	// label given that it is among them (KS's within-top-r).
	WithinTopR Notion = "within_top_r"
	// Binary compares one-column predictions p1 with P(y = 1 | p1).
	Binary Notion = "binary"
	// None is the notion of a number that is not a calibration error (the
	// proper scores, accuracy, confidence).
	None Notion = ""
)

// All returns every notion but None, in order.
func All() []Notion { return slices.Clone(allNotions) }

var allNotions = []Notion{Canonical, ClassWise, TopLabel, TopR, WithinTopR, Binary}

// aliases are the earlier spellings read on input.
var aliases = map[string]Notion{"marginal": ClassWise, "toplabel": TopLabel}

// Parse returns the notion named s: a name of All or an earlier spelling
// ("marginal", "toplabel"), in any case, with '-' for '_' and surrounding
// spaces ignored; "" is None.
func Parse(s string) (Notion, error) {
	t := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	if t == "" {
		return None, nil
	}
	if n, ok := aliases[t]; ok {
		return n, nil
	}
	names := make([]string, len(allNotions))
	for i, n := range allNotions {
		names[i] = string(n)
	}
	i, err := textenum.Parse("notion", s, names)
	if err != nil {
		return None, err
	}
	return allNotions[i], nil
}

// String returns the notion's name.
func (n Notion) String() string { return string(n) }

// MarshalText implements encoding.TextMarshaler.
func (n Notion) MarshalText() ([]byte, error) { return []byte(n), nil }

// UnmarshalText implements encoding.TextUnmarshaler, as Parse.
func (n *Notion) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return fmt.Errorf("notion: %w", err)
	}
	*n = v
	return nil
}
