package kde

import (
	"fmt"

	"github.com/calib-dev/calib/internal/textenum"
	"github.com/calib-dev/calib/notion"
)

// Notion is a notion of calibration: which conditional expectation the
// estimator compares the predictions with.
type Notion int

const (
	// Canonical compares the whole probability vector f with E[y | f]
	// using the Dirichlet kernel on the simplex (eq. 9-10).
	Canonical Notion = iota
	// Marginal (class-wise, spelled class_wise: notion.ClassWise)
	// compares each coordinate f_k with P(y = k | f_k) using a Beta
	// kernel on that coordinate (eq. 8).
	Marginal
	// TopLabel compares the confidence c = max_k f_k with
	// P(y = argmax f | c) using a Beta kernel on c.
	TopLabel
	// Binary is one-column input p1 = P(y = 1): 2 x the Beta estimate on
	// p1, which equals Canonical on the two columns (1-p1, p1).
	Binary
)

// notionNames are the notions' names (package notion's spellings).
var notionNames = [...]string{string(notion.Canonical), string(notion.ClassWise), string(notion.TopLabel), string(notion.Binary)}

// Notions lists every notion in order.
var Notions = []Notion{Canonical, Marginal, TopLabel, Binary}

// String returns the notion's name as used in the JSON output and on the
// command line: canonical, class_wise, top_label or binary (Name).
func (n Notion) String() string {
	if n < 0 || int(n) >= len(notionNames) {
		return fmt.Sprintf("Notion(%d)", int(n))
	}
	return notionNames[n]
}

// MarshalText implements encoding.TextMarshaler.
func (n Notion) MarshalText() ([]byte, error) {
	if n < 0 || int(n) >= len(notionNames) {
		return nil, fmt.Errorf("kde: invalid notion %d", int(n))
	}
	return []byte(n.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, as ParseNotion.
func (n *Notion) UnmarshalText(b []byte) error {
	v, err := ParseNotion(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// ParseNotion returns the notion named s, read as notion.Parse reads it
// (earlier spellings too: "marginal" is Marginal, "toplabel" TopLabel).
func ParseNotion(s string) (Notion, error) {
	n, err := notion.Parse(s)
	if err == nil {
		for i, name := range notionNames {
			if string(n) == name {
				return Notion(i), nil
			}
		}
	}
	_, err = textenum.Parse("notion", s, notionNames[:])
	return 0, err
}

// Name returns the notion's name in package notion's vocabulary.
func (n Notion) Name() notion.Notion { return notion.Notion(n.String()) }
