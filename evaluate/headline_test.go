package evaluate

import (
	"strings"
	"testing"
)

// TestAdviceNote: the note names the headline with its value and interval
// when the evaluation has it; without it, it says how to get it, and it
// never names another estimator as the number to report.
func TestAdviceNote(t *testing.T) {
	p1 := 1.0
	h := &Result{Metric: ECEVariational, Notion: "canonical", Loss: "lp", P: &p1, Value: jf(0.1234), Interval: []Float{0.1, 0.15}}
	paper := &Result{Metric: ECEBin, Notion: "top_label", P: &p1, Value: jf(0.05)}
	for _, c := range []struct {
		ev   *Evaluation
		want []string
	}{
		{&Evaluation{Results: []*Result{h, paper}}, []string{"report: " + Headline.String() + " = 0.1234 [0.1000, 0.1500]", PaperNumber.String() + " = 0.0500"}},
		{&Evaluation{Results: []*Result{h}}, []string{"report: " + Headline.String() + " = 0.1234 [0.1000, 0.1500]"}},
		{&Evaluation{Results: []*Result{paper}}, []string{"add ece_variational to --metrics", "0.0500 is the number papers print"}},
	} {
		got := AdviceNote(c.ev)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
		if strings.Contains(got, "witness") {
			t.Errorf("%q names the witness", got)
		}
	}
	if got := AdviceNote(&Evaluation{}); got != "" {
		t.Errorf("no entries: %q", got)
	}
}
