package compare

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/goldenjson"
	"github.com/calib-dev/calib/recal"
)

func load(t *testing.T, name string) *data.Set {
	t.Helper()
	s, err := data.Load("testdata/"+name+".csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.File = "../../testdata/golden/ecekde/" + name + ".csv" // as the CLI golden file names it
	return s
}

// TestCompareMatchesGolden: the library with zero options (seed 1)
// reproduces calib compare --json on the same files, checked against the
// CLI's golden file made before the library existed (times and provenance
// aside).
func TestCompareMatchesGolden(t *testing.T) {
	val, test := load(t, "c07_n100_k4_onehot_row"), load(t, "c09_n40_k4_toplabel_one_correct")
	c, err := Compare(context.Background(), val, test, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, c); err != nil {
		t.Fatal(err)
	}
	diffs, err := goldenjson.CompareFile(b.Bytes(), "../cmd/calib/internal/cli/testdata/compare-k4.json.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("Compare differs from calib compare's golden JSON: %s", d)
	}
	var text strings.Builder
	if err := WriteText(&text, c); err != nil || !strings.Contains(text.String(), "best:") {
		t.Errorf("WriteText: %v\n%s", err, text.String())
	}
}

// TestCompareErrors: sets of different K are bad input; a cancelled
// context stops Compare.
func TestCompareErrors(t *testing.T) {
	val, test := load(t, "c07_n100_k4_onehot_row"), load(t, "c09_n40_k4_toplabel_one_correct")
	three, _ := data.New([]float64{0.2, 0.3, 0.5, 0.6, 0.3, 0.1}, 3, []int{0, 2}, false, data.Options{})
	if _, err := Compare(context.Background(), val, three, Options{}); !errors.Is(err, recal.ErrInput) {
		t.Errorf("K 4 against 3: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compare(ctx, val, test, Options{Methods: []recal.Method{recal.MethodIsotonic}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRowKeepsWhatItComputed: where one figure of a row cannot be
// computed (ece_variational on one-hot predictions: no family fits) it is
// nil and named in the row's error, and the others keep their values; a
// method that does not fit has every figure nil, never 0.
func TestRowKeepsWhatItComputed(t *testing.T) {
	const n, k = 60, 3
	probs, labels := make([]float64, n*k), make([]int, n)
	for i := range n {
		labels[i] = i % k
		probs[i*k+(i*7/3)%k] = 1 // one-hot, right about a third of the time
	}
	s := &data.Set{Probs: probs, Labels: labels, N: n, K: k, File: "onehot"}
	c, err := Compare(context.Background(), s, s, Options{Methods: []recal.Method{recal.MethodPlatt}})
	if err != nil {
		t.Fatal(err)
	}
	u, platt := c.Rows[0], c.Rows[1]
	if u.Headline != nil || !strings.Contains(u.Error, "ece_variational") || u.Accuracy == nil || u.Brier == nil || u.KSTop1 == nil {
		t.Errorf("uncalibrated: CE_1 %v, accuracy %v, Brier %v, KS %v, error %q", u.Headline, u.Accuracy, u.Brier, u.KSTop1, u.Error)
	}
	if platt.Error == "" || platt.Accuracy != nil || platt.NLL != nil || platt.Headline != nil {
		t.Errorf("platt: error %q, accuracy %v, NLL %v", platt.Error, platt.Accuracy, platt.NLL)
	}
	// No map that keeps the NLL has the headline (none has one): keep the
	// model as it is, the reason says why.
	if r := c.Recommended; r == nil || r.Method != "uncalibrated" || !strings.HasPrefix(r.Reason, "keep the model as it is: NLL ") {
		t.Errorf("recommended %+v", r)
	}
}
