package kde

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// The golden files are the reference code's outputs (tpopordanoska/ece-kde,
// commit d9f60c0) copied from shared/golden/ecekde; testdata/golden/ecekde/
// README.md defines every field.
const goldenDir = "../testdata/golden/ecekde"

// num is a JSON number that may be written as the string "NaN", "Inf" or
// "-Inf".
type num float64

func (x *num) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*x = num(math.NaN())
		case "Inf":
			*x = num(math.Inf(1))
		case "-Inf":
			*x = num(math.Inf(-1))
		default:
			return fmt.Errorf("bad number %q", s)
		}
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*x = num(f)
	return err
}

type looGolden struct {
	Float64 struct {
		LogLik            []num   `json:"loglik"`
		SelectedBandwidth float64 `json:"selected_bandwidth"`
		SelectedIndex     int     `json:"selected_index"`
	} `json:"float64"`
}

type golden struct {
	Case  string `json:"case"`
	Input struct {
		CSV    string      `json:"csv"`
		N      int         `json:"n"`
		K      int         `json:"K"`
		Logits [][]float64 `json:"logits"`
	} `json:"input"`
	Results []struct {
		Mode      string  `json:"mode"`
		P         float64 `json:"p"`
		Bandwidth float64 `json:"bandwidth"`
		Float64   num     `json:"float64"`
		Logspace  *num    `json:"float64_logspace"`
	} `json:"results"`
	Diagnostics []struct {
		Bandwidth float64 `json:"bandwidth"`
		Float64   struct {
			Clamped int `json:"rows_den_clamped"`
		} `json:"float64"`
	} `json:"canonical_denominator_diagnostics"`
	LOO struct {
		Input struct {
			Grid []float64 `json:"grid"`
			looGolden
		} `json:"input"`
		TopLabel *looGolden `json:"top_label_confidence_column"`
		Binary   *looGolden `json:"binary_1col_p1"`
	} `json:"loo_mle"`
	Gradients []struct {
		Mode          string  `json:"mode"`
		P             float64 `json:"p"`
		Bandwidth     float64 `json:"bandwidth"`
		Probabilities struct {
			Value float64     `json:"value"`
			Grad  [][]float64 `json:"grad"`
		} `json:"probabilities"`
		Logits struct {
			Value float64     `json:"value"`
			Grad  [][]float64 `json:"grad"`
		} `json:"logits"`
	} `json:"gradients"`
}

type goldenCase struct {
	golden
	set *data.Set
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in %s: %v", goldenDir, err)
	}
	var cases []goldenCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g goldenCase
		if err := json.Unmarshal(b, &g.golden); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		// The golden CSVs must load as they are.
		g.set, err = data.Load(filepath.Join(goldenDir, g.Input.CSV), data.Options{})
		if err != nil {
			t.Fatalf("loading %s: %v", g.Input.CSV, err)
		}
		if g.set.N != g.Input.N || g.set.K != g.Input.K {
			t.Fatalf("%s: loaded %dx%d, want %dx%d", g.Case, g.set.N, g.set.K, g.Input.N, g.Input.K)
		}
		cases = append(cases, g)
	}
	return cases
}

// hasExactZeros reports the cases where the reference returns NaN because of
// 0 * log 0 (c06, c07): we compute finite values there, checked against the
// brute-force oracle in TestBruteForceExactZeros instead.
func (g *goldenCase) hasExactZeros() bool {
	for _, v := range g.set.Probs {
		if v == 0 || v == 1 {
			return true
		}
	}
	return false
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(b), 1e-300)
}

// TestGoldenEstimates checks every (mode, p, bandwidth) of every visible
// golden case against the reference (relative 1e-9): canonical against the
// reference's log-space routine everywhere and against its exp path where
// its 1e-10 denominator floor did not trigger; marginal, top_label and
// binary_1col against the float64 values. NaN reference values (exact
// zeros) must be finite here.
func TestGoldenEstimates(t *testing.T) {
	const tol = 1e-9
	checked, worst := 0, 0.0
	for _, g := range loadGolden(t) {
		clamped := map[float64]int{}
		for _, d := range g.Diagnostics {
			clamped[d.Bandwidth] = d.Float64.Clamped
		}
		for _, r := range g.Results {
			notion, err := ParseNotion(r.Mode)
			if r.Mode == "binary_1col" {
				notion, err = Binary, nil
			}
			if err != nil {
				t.Fatalf("%s: %v", g.Case, err)
			}
			// The exact sweeps against the reference; the default
			// (the series for the one-dimensional notions) against them.
			res, err := Estimate(context.Background(), notion, g.set.Probs, g.set.Labels, g.set.K, nil, Options{Bandwidth: r.Bandwidth, P: []float64{r.P}, Exact: true})
			if err != nil {
				t.Errorf("%s %s p=%v h=%v: %v", g.Case, r.Mode, r.P, r.Bandwidth, err)
				continue
			}
			got := res.Values[0].Value
			if fast, err := Estimate(context.Background(), notion, g.set.Probs, g.set.Labels, g.set.K, nil, Options{Bandwidth: r.Bandwidth, P: []float64{r.P}}); err != nil {
				t.Errorf("%s %s p=%v h=%v: default: %v", g.Case, r.Mode, r.P, r.Bandwidth, err)
			} else if relDiff(fast.Values[0].Value, got) > 1e-11 {
				t.Errorf("%s %s p=%v h=%v: default %v, exact %v", g.Case, r.Mode, r.P, r.Bandwidth, fast.Values[0].Value, got)
			}
			if math.IsNaN(got) || math.IsInf(got, 0) {
				t.Errorf("%s %s p=%v h=%v: value %v is not finite", g.Case, r.Mode, r.P, r.Bandwidth, got)
				continue
			}
			if want := math.Pow(got, 1/r.P); relDiff(res.Values[0].Root, want) > 1e-15 {
				t.Errorf("%s %s: root %v, want %v", g.Case, r.Mode, res.Values[0].Root, want)
			}
			want := float64(r.Float64)
			if notion == Canonical {
				want = float64(*r.Logspace)
				if clamped[r.Bandwidth] == 0 && !math.IsNaN(float64(r.Float64)) {
					if d := relDiff(got, float64(r.Float64)); d > tol {
						t.Errorf("%s canonical p=%v h=%v: %.17g, reference exp path %.17g (rel %.2g)", g.Case, r.P, r.Bandwidth, got, float64(r.Float64), d)
					}
				}
			}
			if math.IsNaN(want) {
				if !g.hasExactZeros() {
					t.Errorf("%s %s p=%v h=%v: reference NaN without exact zeros", g.Case, r.Mode, r.P, r.Bandwidth)
				}
				continue
			}
			d := relDiff(got, want)
			if d > tol {
				t.Errorf("%s %s p=%v h=%v: %.17g, reference %.17g (rel %.2g)", g.Case, r.Mode, r.P, r.Bandwidth, got, want, d)
			}
			worst = math.Max(worst, d)
			checked++
		}
	}
	// The visible set: 9 cases x 30 values + 10 binary_1col values of c01,
	// less the 50 NaN values of c06 (canonical, marginal) and c07 (all
	// modes) = 230.
	if checked == 0 {
		t.Error("no golden value checked")
	}
	t.Logf("%d golden values checked, largest relative difference %.3g", checked, worst)
}

// TestGoldenLOO checks the Reference objective against the reference's LOO
// log-likelihoods (absolute 1e-6 * n; the reference evaluates log((n-1)h) in
// float32) and its selected grid index, for the Dirichlet LOO on the input,
// the Beta LOO on the top-label confidences and on p1 (K = 2).
func TestGoldenLOO(t *testing.T) {
	worst := 0.0 // largest |ours - reference| / n
	defer func() { t.Logf("largest LOO log-likelihood difference: %.3g per sample", worst) }()
	for _, g := range loadGolden(t) {
		grid := DefaultGrid()
		for i, h := range g.LOO.Input.Grid {
			if grid[i] != h {
				t.Fatalf("%s: DefaultGrid()[%d] = %v, reference %v", g.Case, i, grid[i], h)
			}
		}
		runs := []struct {
			name   string
			notion Notion
			want   *looGolden
		}{
			{"input", Canonical, &g.LOO.Input.looGolden},
			{"top_label", TopLabel, g.LOO.TopLabel},
			{"binary_1col", Binary, g.LOO.Binary},
		}
		for _, run := range runs {
			if run.want == nil {
				continue
			}
			want := run.want.Float64
			cv, err := SelectBandwidth(context.Background(), run.notion, g.set.Probs, g.set.Labels, g.set.K, nil, BandwidthOptions{Objective: Reference})
			if want.SelectedIndex < 0 {
				// The reference failed (NaN from exact zeros or no
				// positive value): we must not return -1.
				if err == nil && (cv.Index < 0 || cv.Bandwidth <= 0) {
					t.Errorf("%s %s: returned index %d", g.Case, run.name, cv.Index)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", g.Case, run.name, err)
				continue
			}
			if cv.Index != want.SelectedIndex || cv.Bandwidth != want.SelectedBandwidth {
				t.Errorf("%s %s: selected %d (h=%v), reference %d (h=%v)", g.Case, run.name, cv.Index, cv.Bandwidth, want.SelectedIndex, want.SelectedBandwidth)
			}
			tol := 1e-6 * float64(g.set.N)
			for i, w := range want.LogLik {
				if math.IsNaN(float64(w)) {
					continue
				}
				d := math.Abs(cv.GridLL[i] - float64(w))
				if !(d <= tol) {
					t.Errorf("%s %s: loglik[%d] = %.10g, reference %.10g (abs %.2g > %.2g)", g.Case, run.name, i, cv.GridLL[i], float64(w), d, tol)
				}
				worst = math.Max(worst, d/float64(g.set.N))
			}
		}
	}
}

// TestGoldenGradients checks the gradients of the gradient cases (c13) with
// respect to the probabilities and the logits:
// max |ours - reference| <= 1e-7 max |reference|. binary_1col gradients may
// be given for the single column p1 (n×1) or for both columns.
func TestGoldenGradients(t *testing.T) {
	n := 0
	for _, g := range loadGolden(t) {
		var logits []float64
		for _, row := range g.Input.Logits {
			logits = append(logits, row...)
		}
		for _, gr := range g.Gradients {
			notion, err := ParseNotion(strings.TrimSuffix(gr.Mode, "_logspace"))
			if gr.Mode == "binary_1col" {
				notion, err = Binary, nil
			}
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Bandwidth: gr.Bandwidth}
			v, grad, err := Gradient(context.Background(), nil, notion, g.set.Probs, g.set.Labels, g.set.K, gr.P, nil, opts)
			if err != nil {
				t.Fatalf("%s %s: %v", g.Case, gr.Mode, err)
			}
			name := fmt.Sprintf("%s %s p=%v h=%v", g.Case, gr.Mode, gr.P, gr.Bandwidth)
			if relDiff(v, gr.Probabilities.Value) > 1e-9 {
				t.Errorf("%s: value %v, reference %v", name, v, gr.Probabilities.Value)
			}
			if len(gr.Probabilities.Grad) > 0 && len(gr.Probabilities.Grad[0]) == 1 && notion == Binary {
				col := make([]float64, g.set.N) // the gradient with respect to p1 alone
				for j := range col {
					col[j] = grad[2*j+1]
				}
				grad = col
			}
			compareGrad(t, name+" probabilities", grad, gr.Probabilities.Grad, 1e-7)
			if len(gr.Logits.Grad) == 0 {
				continue
			}
			cols := len(gr.Logits.Grad[0])
			if len(logits) != g.set.N*cols {
				t.Fatalf("%s: %d logits for %d x %d gradients", name, len(logits), g.set.N, cols)
			}
			v, grad, err = LogitGradient(context.Background(), nil, notion, logits, g.set.Labels, cols, gr.P, nil, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if relDiff(v, gr.Logits.Value) > 1e-9 {
				t.Errorf("%s: logit value %v, reference %v", name, v, gr.Logits.Value)
			}
			compareGrad(t, name+" logits", grad, gr.Logits.Grad, 1e-7)
			n++
		}
	}
	// The visible set has 16 gradient cases, all in c13.
	if n == 0 {
		t.Error("no golden gradient checked")
	}
}

func compareGrad(t *testing.T, name string, got []float64, want [][]float64, tol float64) {
	t.Helper()
	var flat []float64
	for _, r := range want {
		flat = append(flat, r...)
	}
	if len(flat) != len(got) {
		t.Fatalf("%s: %d entries, reference %d", name, len(got), len(flat))
	}
	maxAbs, maxDiff := 0.0, 0.0
	for i := range flat {
		maxAbs = math.Max(maxAbs, math.Abs(flat[i]))
		maxDiff = math.Max(maxDiff, math.Abs(got[i]-flat[i]))
	}
	if !(maxDiff <= tol*maxAbs) {
		t.Errorf("%s: max |diff| %.3g = %.3g x max |grad|, want <= %g", name, maxDiff, maxDiff/maxAbs, tol)
	}
	t.Logf("%s: max |diff| / max |grad| = %.3g", name, maxDiff/maxAbs)
}
