package commands

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/report"
)

// TestReportZeroOptionsAreCLIDefaults checks that report.Options' zero
// value is `calib report` without flags: the options the report command
// makes from its default flags (and demo's, which share them) build the
// same Document as the zero Options, on a 3-class set with a validation
// set, up to the volatile parts (the times, and the provenance, which the
// zero Options does not have).
func TestReportZeroOptionsAreCLIDefaults(t *testing.T) {
	var rf reportFlags
	cmd := command("report", "", nil, nil)
	rf.register(cmd, "")
	if err := cmd.Flags().Parse([]string{"-o", filepath.Join(t.TempDir(), "r.html")}); err != nil {
		t.Fatal(err)
	}
	o, err := rf.options(cmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	s, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	val, err := data.Load(golden+"c06_n150_k3_exact_zeros.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	render := func(o report.Options) (html, eval, cmp string) {
		doc, err := report.Build(context.Background(), s, val, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range doc.Summary {
			if f.Name == report.EvaluationTime {
				doc.Summary[i].Value = ""
			}
		}
		doc.Evaluation.Seconds = 0
		for _, e := range doc.Evaluation.Results {
			e.Seconds = nil
		}
		for _, r := range doc.Comparison.Rows {
			r.FitSeconds, r.EvalSeconds = 0, 0
		}
		if t := doc.Sections[len(doc.Sections)-1].Table; t != nil {
			for _, row := range t.Rows {
				row[len(row)-2] = "" // the fit time
			}
		}
		var h, e, c bytes.Buffer
		if err := doc.WriteHTML(&h); err != nil {
			t.Fatal(err)
		}
		if err := evaluate.WriteJSON(&e, doc.Evaluation); err != nil {
			t.Fatal(err)
		}
		if err := compare.WriteJSON(&c, doc.Comparison); err != nil {
			t.Fatal(err)
		}
		return h.String(), e.String(), c.String()
	}
	h0, e0, c0 := render(report.Options{})
	h1, e1, c1 := render(o)
	if h0 != h1 {
		t.Errorf("the HTML of the zero Options differs from the CLI defaults'")
	}
	if e0 != e1 {
		t.Errorf("the evaluation of the zero Options differs from the CLI defaults':\n%s\n%s", e0, e1)
	}
	if c0 != c1 {
		t.Errorf("the comparison of the zero Options differs from the CLI defaults':\n%s\n%s", c0, c1)
	}
}

// TestReportPValuesOptions: report and demo with --p-values build their
// options (evaluate.Options.Validate with no data yet) without a set: they
// went through a nil set and panicked.
func TestReportPValuesOptions(t *testing.T) {
	for _, name := range []string{"report", "demo"} {
		var rf reportFlags
		cmd := command(name, "", nil, nil)
		rf.register(cmd, "")
		if err := cmd.Flags().Parse([]string{"-o", filepath.Join(t.TempDir(), "r.html"), "--p-values"}); err != nil {
			t.Fatal(err)
		}
		if _, err := rf.options(cmd.Flags()); err != nil {
			t.Errorf("%s --p-values: %v", name, err)
		}
	}
}
