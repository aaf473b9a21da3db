package evaluate

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/goldenjson"
	"github.com/calib-dev/calib/kde"
)

func loadTest(t *testing.T) *data.Set {
	t.Helper()
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEvaluateMatchesGolden: the library's Options (with CI on) reproduce
// calib eval --ci --json on the same file, checked against the CLI's golden
// files: Metrics = Metrics against --metrics all (made before the library
// existed), the zero value (CI aside: the seed too) against the default
// (DefaultMetrics, --seed 1); times and provenance aside.
func TestEvaluateMatchesGolden(t *testing.T) {
	s := loadTest(t)
	s.File = "../../testdata/golden/ecekde/c02_n200_k3.csv" // the name the CLI golden file holds
	for _, c := range []struct {
		o      Options
		golden string
	}{{Options{Metrics: Metrics, CI: true, Seed: 1}, "eval-c02_n200_k3"}, {Options{CI: true}, "eval-default-c02_n200_k3"}} {
		ev, err := Evaluate(context.Background(), s, c.o)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteJSON(&b, ev); err != nil {
			t.Fatal(err)
		}
		diffs, err := goldenjson.CompareFile(b.Bytes(), "../cmd/calib/internal/cli/testdata/"+c.golden+".json.golden")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Errorf("Evaluate differs from calib eval's golden JSON %s: %s", c.golden, d)
		}
	}
}

// TestEvaluateOptions: bad options are ErrOptions, a cancelled context
// stops the evaluation, and Strict turns a failing metric into an error.
func TestEvaluateOptions(t *testing.T) {
	s := loadTest(t)
	for _, o := range []Options{{Metrics: MetricSet{"nope"}}, {P: []float64{0.5}}, {P: []float64{1000}}, {Mode: NotionSet{Notions: []kde.Notion{kde.Notion("nope")}}},
		{Bandwidth: -1}, {KS: KSOptions{R: []int{0}}}, {MMCE: MMCEOptions{Width: -1}}, {CI: true, Level: 2}} {
		if _, err := Evaluate(context.Background(), s, o); !errors.Is(err, ErrOptions) {
			t.Errorf("%+v: %v, want ErrOptions", o, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Evaluate(ctx, s, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	one, _ := data.New([]float64{0.6, 0.4}, 2, []int{0}, false, data.Options{})
	if _, err := Evaluate(context.Background(), one, Options{Metrics: MetricSet{"ece_kde"}, Strict: true}); err == nil {
		t.Error("ece_kde on one sample: no error with Strict")
	}
	ev, err := Evaluate(context.Background(), one, Options{Metrics: MetricSet{"ece_kde", "brier"}})
	if err != nil || ev.Results[0].Error == "" || ev.Results[1].Value == nil {
		t.Errorf("not strict: %v, %+v", err, ev)
	}
}
