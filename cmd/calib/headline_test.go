package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/calib-dev/calib/cmd/calib/internal/demotext"
	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/evaluate/evaltext"
	"github.com/calib-dev/calib/report"
)

// TestOneHeadline: every place that advises a number names
// evaluate.Headline and no other: DefaultMetrics and the default
// evaluation (its first entry, the document's "headline" key, the note
// under the table), eval's --help, the report's fact, the demo's first
// figure, compare's first ranked column, the Python package (which reads
// the document's key) and the README; and none of them still tells users
// to report the witness.
func TestOneHeadline(t *testing.T) {
	h := evaluate.Headline.String()
	if evaluate.DefaultMetrics[0] != evaluate.Headline.Metric {
		t.Errorf("DefaultMetrics %v do not start with the headline's metric", evaluate.DefaultMetrics)
	}
	s, err := data.Load("../../evaluate/testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Results[0].Key(); got != evaluate.Headline {
		t.Errorf("the default's first entry is %v, want %v", got, evaluate.Headline)
	}
	if r := ev.Headline; r == nil || r.Metric != evaluate.Headline.Metric || r.Notion != evaluate.Headline.Notion || r.P != evaluate.Headline.P || r.Loss != evaluate.Headline.Variant {
		t.Errorf("the document's headline key is %+v", r)
	}
	if e := ev.Results[0]; len(e.Interval) != 2 {
		t.Errorf("the headline has no interval: %+v", e)
	}
	var text bytes.Buffer
	if err := evaltext.WriteText(&text, ev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "report: "+h+" = ") {
		t.Errorf("calib eval's notes do not name %q:\n%s", h, text.String())
	}
	var demo bytes.Buffer
	demotext.WriteHeadline(&demo, ev)
	if lines := strings.Split(demo.String(), "\n"); len(lines) < 2 || !strings.Contains(lines[1], "report this") || !strings.Contains(lines[1], "0.2165") {
		t.Errorf("the demo's first figure is not the headline:\n%s", demo.String())
	}
	if !strings.Contains(report.HeadlineFact, h) {
		t.Errorf("the report's fact %q does not name %q", report.HeadlineFact, h)
	}
	if !strings.HasPrefix(compare.RankingNote, "Ranked first by "+h) {
		t.Errorf("compare's ranking note: %q", compare.RankingNote)
	}
	for _, f := range []string{"../../README.md", "internal/cli/help/eval.txt", "../../python/calib/_api.py"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := h
		if strings.HasSuffix(f, ".py") {
			want = "evaluate.Headline" // the Python package reads the document's key
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not name %q", f, want)
		}
		for _, stale := range []string{"witness canonical CE_1 (report this)", "trust it for how miscalibrated", "read ece_witness instead"} {
			if strings.Contains(string(b), stale) {
				t.Errorf("%s still says %q", f, stale)
			}
		}
	}
}
