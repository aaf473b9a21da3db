package evaluate

import (
	"strconv"

	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/variational"
)

// Headline is the entry that answers "how miscalibrated is the model?"
// at any number of classes: ece_variational, canonical, lp loss, p = 1,
// the cross-fitted gain of the best of a few recalibration maps, an
// estimate of the canonical L1 calibration error
//
//	CE_1 = E ||E[y | f(x)] - f(x)||_1,
//
// reported with its 95 % interval. Measured against ground truth
// (calib experiment headline, docs/evidence/experiments/headline.txt: K =
// 2 to 100, 40 data sets a cell), it reads 0.96 to 1.01 of the truth at n
// = 20,000 on six kinds of miscalibration but one class's own distortion
// at K = 100 (0.90), and 0.92 to 1.02 at n = 5,000 but at K = 100 (0.80
// and 0.64 where only boost holds the distortion); where it reads low it
// is a lower bound. It is the first entry calib eval
// computes and prints, and every place that advises a number reads it
// from here: DefaultMetrics, the notes under the table (AdviceNote), the
// report's facts, the demo, compare's ranking, the Python package's
// Evaluation.headline and the README.
var Headline = Key{Metric: ECEVariational, Notion: notion.Canonical, P: 1, Variant: string(variational.Lp)}

// PaperNumber is the entry that answers "which number do papers print?":
// the top-label binned ECE, 15 equal-width bins, p = 1: the confidence
// against the accuracy, a different and, at K >= 10, much smaller number
// than the canonical CE_1 (it keeps an upward floor of +0.004 to +0.017 on
// calibrated models at n = 5,000).
var PaperNumber = Key{Metric: ECEBin, Notion: notion.TopLabel, P: 1}

// EntryRef is a Key as the evaluation document writes it: the keys of the
// entry it names ("metric", "notion", "p", "r", "loss" for ece_variational).
type EntryRef struct {
	Metric Metric        `json:"metric"`
	Notion notion.Notion `json:"notion,omitempty"`
	P      float64       `json:"p,omitempty"`
	R      int           `json:"r,omitempty"`
	Loss   string        `json:"loss,omitempty"`
}

// refOf returns the document's reference to the entry of key k in ev, or
// nil when ev has no such entry with a value.
func refOf(ev *Evaluation, k Key) *EntryRef {
	if e := ev.Lookup(k); e == nil || e.Value == nil {
		return nil
	}
	r := &EntryRef{Metric: k.Metric, Notion: k.Notion, P: k.P, R: k.R}
	if k.Metric == ECEVariational {
		r.Loss = k.Variant
	}
	return r
}

// setHeadline names the headline and the paper number in ev where it has
// them (Evaluation.Headline, PaperNumber).
func setHeadline(ev *Evaluation) {
	ev.Headline, ev.PaperNumber = refOf(ev, Headline), refOf(ev, PaperNumber)
}

// String returns the key as calib's tables print it: the metric, the
// notion, p=P or r=R, and the variant in parentheses, e.g.
// "ece_variational canonical p=1 (lp)".
func (k Key) String() string {
	s := string(k.Metric)
	if k.Notion != notion.None {
		s += " " + string(k.Notion)
	}
	if k.P != 0 {
		s += " p=" + strconv.FormatFloat(k.P, 'g', -1, 64)
	}
	if k.R != 0 {
		s += " r=" + strconv.Itoa(k.R)
	}
	if k.Variant != "" {
		s += " (" + k.Variant + ")"
	}
	return s
}
