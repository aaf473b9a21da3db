package evaltext

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

func jf(v float64) *data.Float { f := data.Float(v); return &f }

// TestAdviceNote: the note names the headline with its value and interval
// when the evaluation has it; without it, it says how to get it, and it
// never names another estimator as the number to report.
func TestAdviceNote(t *testing.T) {
	p1 := 1.0
	h := &evaluate.Result{Metric: evaluate.ECEVariational, Notion: "canonical", VariationalKeys: evaluate.VariationalKeys{Loss: "lp"}, P: &p1, Value: jf(0.1234), Interval: []data.Float{0.1, 0.15}}
	paper := &evaluate.Result{Metric: evaluate.ECEBin, Notion: "top_label", P: &p1, Value: jf(0.05)}
	failed := &evaluate.Result{Metric: evaluate.ECEVariational, Notion: "-", Error: "variational: no family fits these data"}
	for _, c := range []struct {
		ev   *evaluate.Evaluation
		want []string
	}{
		{&evaluate.Evaluation{Results: []*evaluate.Result{h, paper}}, []string{"report: " + evaluate.Headline.String() + " = 0.1234 [0.1000, 0.1500]", evaluate.PaperNumber.String() + " = 0.0500"}},
		{&evaluate.Evaluation{Results: []*evaluate.Result{h}}, []string{"report: " + evaluate.Headline.String() + " = 0.1234 [0.1000, 0.1500]"}},
		{&evaluate.Evaluation{Results: []*evaluate.Result{paper}}, []string{"add ece_variational to --metrics", "0.0500 is the number papers print"}},
		// Asked for and failed (one class: no family fits): the note says
		// so, and does not ask for the metric again.
		{&evaluate.Evaluation{Results: []*evaluate.Result{failed, paper}}, []string{"ece_variational, the number to report, could not be computed on these data (its error is above)", "0.0500 is the number papers print"}},
		{&evaluate.Evaluation{Results: []*evaluate.Result{failed}}, []string{"could not be computed on these data"}},
	} {
		got := AdviceNote(c.ev)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
		if c.ev.Results[0] == failed && strings.Contains(got, "add ") {
			t.Errorf("%q recommends the metric that failed", got)
		}
		if strings.Contains(got, "witness") {
			t.Errorf("%q names the witness", got)
		}
	}
	if got := AdviceNote(&evaluate.Evaluation{}); got != "" {
		t.Errorf("no entries: %q", got)
	}
}

// TestErrorCellStaysNarrow: a failed entry's value cell says "error
// (below)" and its message, however long, follows the table, so the
// table's rows keep their width.
func TestErrorCellStaysNarrow(t *testing.T) {
	msg := "more than 5190 occupied canonical cells (15 bins per coordinate, K = 100): " + strings.Repeat("their sums would pass the stream's memory bound; ", 4)
	out := &evaluate.Evaluation{File: "x.npy", N: 10, K: 100, Results: []*evaluate.Result{
		{Metric: evaluate.ECEBin, Notion: "canonical", Error: msg},
		{Metric: evaluate.Brier, Value: jf(0.25)},
	}}
	var b bytes.Buffer
	if err := WriteText(&b, out); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	table, after, ok := strings.Cut(text, "error: ece_bin canonical: ")
	if !ok || !strings.HasPrefix(after, msg) {
		t.Fatalf("the message does not follow the table:\n%s", text)
	}
	for _, line := range strings.Split(table, "\n") {
		if len(line) > 120 {
			t.Errorf("a row of %d characters: %q", len(line), line)
		}
	}
	if !strings.Contains(table, "error (below)") {
		t.Errorf("no error cell:\n%s", table)
	}
}

// TestWriteText: the table of a real evaluation names its metrics, and a
// weighted evaluation's first line says every number is weighted.
func TestWriteText(t *testing.T) {
	s, err := data.New([]float64{0.9, 0.1, 0.2, 0.8, 0.6, 0.4, 0.3, 0.7}, 2, []int{0, 1, 1, 1}, false, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{Metrics: evaluate.MetricSet{evaluate.ECEBin, evaluate.Brier}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := WriteText(&text, ev); err != nil || !strings.Contains(text.String(), "ece_bin") || strings.Contains(text.String(), "weighted") {
		t.Errorf("WriteText: %v\n%s", err, text.String())
	}
	ev.WeightSum = 4
	text.Reset()
	if err := WriteText(&text, ev); err != nil || !strings.Contains(text.String(), "sample weights (sum 4): every number below is weighted") {
		t.Errorf("the table does not say the numbers are weighted: %v\n%.300s", err, text.String())
	}
}
