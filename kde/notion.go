package kde

import (
	"slices"

	"github.com/calib-dev/calib/internal/textenum"
	"github.com/calib-dev/calib/notion"
)

// Notion is a notion of calibration: package notion's type, so that an
// estimator's notion is the one every result and option names.
type Notion = notion.Notion

// The notions of the kernel estimators (Notions), package notion's values.
const (
	Canonical = notion.Canonical
	ClassWise = notion.ClassWise
	TopLabel  = notion.TopLabel
	Binary    = notion.Binary
)

// Notions returns the notions of calibration the kernel estimators compute,
// in order (package notion's type and spellings):
//
//   - notion.Canonical compares the whole probability vector f with
//     E[y | f] using the Dirichlet kernel on the simplex (eq. 9-10);
//   - notion.ClassWise compares each coordinate f_k with P(y = k | f_k)
//     using a Beta kernel on that coordinate (eq. 8);
//   - notion.TopLabel compares the confidence c = max_k f_k with
//     P(y = argmax f | c) using a Beta kernel on c;
//   - notion.Binary is one-column input p1 = P(y = 1): 2 x the Beta
//     estimate on p1, which equals Canonical on the two columns
//     (1-p1, p1).
func Notions() []Notion { return slices.Clone(notionList) }

var notionList = []Notion{Canonical, ClassWise, TopLabel, Binary}

// notionNames are the names of Notions.
var notionNames = func() []string {
	s := make([]string, len(notionList))
	for i, n := range notionList {
		s[i] = string(n)
	}
	return s
}()

// ParseNotion returns the kernel estimators' notion named s, read as
// notion.Parse reads it (earlier spellings too: "marginal" is class_wise,
// "toplabel" top_label); the notions they do not compute are refused,
// listing theirs.
func ParseNotion(s string) (Notion, error) {
	n, err := notion.Parse(s)
	if err == nil && slices.Contains(notionList, n) {
		return n, nil
	}
	_, err = textenum.Parse("notion", s, notionNames) // s is none of notionNames
	return "", err
}
