package report_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/recal"
	"github.com/calib-dev/calib/report"
)

const golden = "../testdata/golden/ecekde/"

// Example builds the report of a 3-class prediction file with a validation
// set, prints its sections and the metrics of its table, and renders it.
func Example() {
	test, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		panic(err)
	}
	val, err := data.Load(golden+"c06_n150_k3_exact_zeros.csv", data.Options{})
	if err != nil {
		panic(err)
	}
	o := report.Options{Methods: []recal.Method{recal.MethodSpline, recal.MethodIsotonic}}
	o.Figures.PerClass = 2
	doc, err := report.Build(context.Background(), test, val, o)
	if err != nil {
		panic(err)
	}
	for _, s := range doc.Sections {
		fmt.Printf("%s: %d figure(s)\n", s.Title, len(s.Figures))
	}
	var metrics []string
	for _, row := range doc.Metrics.Rows {
		if !slices.Contains(metrics, row[1]) {
			metrics = append(metrics, row[1])
		}
	}
	fmt.Println(strings.Join(metrics, " "))
	fmt.Println(len(doc.Comparison.Rows), "rows compared;", len(doc.Warnings), "warnings")
	if err := doc.WriteHTML(io.Discard); err != nil {
		panic(err)
	}
	// Output:
	// Is it calibrated?: 0 figure(s)
	// Reliability diagrams: 2 figure(s)
	// Per-class reliability: 2 figure(s)
	// KS calibration graphs: 1 figure(s)
	// Calibration on the simplex: 1 figure(s)
	// Bandwidth of ECE^KDE: 1 figure(s)
	// Recalibration methods: 1 figure(s)
	// ece_variational ece_kde ece_witness ece_bin mce atb atb_debiased ece_bin_debiased ks smece ece_sweep sharpness mmce brier nll accuracy confidence
	// 3 rows compared; 0 warnings
}

// cancelAt is a Progress that cancels its context when the phase named
// at starts.
type cancelAt struct {
	at     string
	cancel context.CancelFunc
	phases []string
}

func (c *cancelAt) Phase(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	c.phases = append(c.phases, p)
	if p == c.at {
		c.cancel()
	}
}

func (c *cancelAt) Step(string) (kde.Progress, func()) { return nil, func() {} }

// TestBuildCancelled checks that Build returns the context's error when
// the context is cancelled before it starts, and when it is cancelled
// while the figures are made (after the evaluation), rather than a
// report.
func TestBuildCancelled(t *testing.T) {
	s, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if doc, err := report.Build(ctx, s, nil, report.Options{}); !errors.Is(err, context.Canceled) || doc != nil {
		t.Errorf("cancelled before: doc %v, err %v", doc != nil, err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	p := &cancelAt{at: "figures", cancel: cancel}
	doc, err := report.Build(ctx, s, nil, report.Options{NoIntervals: true, Progress: p})
	if !errors.Is(err, context.Canceled) || doc != nil {
		t.Errorf("cancelled at the figures: doc %v, err %v (phases %q)", doc != nil, err, p.phases)
	}
	if !slices.Contains(p.phases, "figures") {
		t.Errorf("phases %q: no figures", p.phases)
	}
}

// TestBuildOptions checks the options Build refuses before any work (each
// error wraps report.ErrOptions, or evaluate.ErrOptions for a metric
// option, or recal.ErrInput for sets of different K) and the ones it reads
// differently from evaluate: Mode's zero value means canonical and top-label, and
// intervals are on unless NoIntervals.
func TestBuildOptions(t *testing.T) {
	s, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k4, err := data.Load(golden+"c07_n100_k4_onehot_row.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    report.Options
		val  *data.Set
		want error
		data bool // refused only against the data: Validate passes
	}{
		{"unknown method", report.Options{Methods: []recal.Method{"nope"}}, nil, report.ErrOptions, false},
		{"bad grid", report.Options{Grid: "huge"}, nil, report.ErrOptions, false},
		{"one class", report.Options{Figures: report.FigureOptions{Classes: []int{1}}}, nil, report.ErrOptions, false},
		{"same classes", report.Options{Figures: report.FigureOptions{Classes: []int{1, 1}}}, nil, report.ErrOptions, false},
		{"negative bins", report.Options{Figures: report.FigureOptions{Bins: metric.BinOptions{Bins: -1}}}, nil, report.ErrOptions, false},
		{"p below 1", report.Options{Eval: evaluate.Options{P: []float64{0.5}}}, nil, evaluate.ErrOptions, false},
		{"unknown notion", report.Options{Eval: evaluate.Options{Mode: evaluate.NotionSet{Notions: []kde.Notion{kde.Notion("nope")}}}}, nil, evaluate.ErrOptions, false},
		{"class above K", report.Options{Figures: report.FigureOptions{Classes: []int{0, 3}}}, nil, report.ErrOptions, true},
		{"K differs", report.Options{}, k4, recal.ErrInput, true},
	} {
		if err := c.o.Validate(); c.data != (err == nil) || !c.data && !errors.Is(err, c.want) {
			t.Errorf("%s: Validate: %v", c.name, err)
		}
		doc, err := report.Build(context.Background(), s, c.val, c.o)
		if !errors.Is(err, c.want) || doc != nil {
			t.Errorf("%s: Build: %v", c.name, err)
		}
	}
	doc, err := report.Build(context.Background(), s, nil, report.Options{NoIntervals: true, Figures: report.FigureOptions{PerClass: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var notions []string
	for _, e := range doc.Evaluation.Results {
		if e.Metric == "ece_kde" && !slices.Contains(notions, string(e.Notion)) {
			notions = append(notions, string(e.Notion))
		}
		if len(e.CI) != 0 {
			t.Errorf("%s %s: interval with NoIntervals", e.Metric, e.Notion)
		}
	}
	if !slices.Equal(notions, []string{"canonical", "top_label"}) {
		t.Errorf("ece_kde notions %v, want canonical and top_label", notions)
	}
	for _, sec := range doc.Sections {
		if sec.ID == "per-class" {
			t.Error("PerClass -1: a per-class section")
		}
	}
}

// TestBuildFigureFailure: a set too small for the reliability curve's
// cross-validation (fewer than 10 samples) still gets a report; the
// figure is left out, named in Warnings (a *report.FigureError) and in the
// notes.
func TestBuildFigureFailure(t *testing.T) {
	s, err := data.Load(golden+"c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	small := *s
	small.N, small.Probs, small.Labels = 8, s.Probs[:8*s.K], s.Labels[:8]
	doc, err := report.Build(context.Background(), &small, nil, report.Options{NoIntervals: true})
	if err != nil {
		t.Fatal(err)
	}
	var fe *report.FigureError
	if len(doc.Warnings) == 0 || !errors.As(doc.Warnings[0], &fe) || fe.Figure != "top-label reliability diagram" {
		t.Fatalf("warnings %v", doc.Warnings)
	}
	found := false
	for _, n := range doc.Notes {
		found = found || strings.HasPrefix(n, "Not drawn: top-label reliability diagram: ")
	}
	if !found {
		t.Errorf("notes %q", doc.Notes)
	}
	var buf bytes.Buffer
	if err := doc.WriteHTML(&buf); err != nil || !strings.Contains(buf.String(), "Not drawn") {
		t.Errorf("HTML: %v", err)
	}
}
