package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/synth"
)

// TestConvergenceQuick runs the quick experiment and checks its structure,
// the ground truth (K = 4: 0.2335, the paper's integration), determinism for
// a seed, and the files Save writes.
func TestConvergenceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick experiment, twice: runs without -short")
	}
	r, err := Convergence(context.Background(), ConvergenceOptions{Quick: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Settings) != 3 || len(r.Convergence) != 3*14 || len(r.Sweep) != 3*6 || len(r.Rules) != 3*6 || len(r.Crossings) != 3 || len(r.Calibrated) != 3 || len(r.LargeK) != 1 {
		t.Fatalf("sizes: %d settings, %d convergence, %d sweep, %d rules, %d crossings, %d calibrated",
			len(r.Settings), len(r.Convergence), len(r.Sweep), len(r.Rules), len(r.Crossings), len(r.Calibrated))
	}
	if g := r.Settings[0].Truth; math.Abs(g.Value-0.2335) > 4*g.SE+5e-5 {
		t.Errorf("K = 4 truth %v", g)
	}
	if g := r.Settings[0].Truth2; math.Abs(g.Value-0.02238) > 4*g.SE+5e-5 {
		t.Errorf("K = 4 truth CE_2^2 %v", g)
	}
	for _, row := range r.Convergence {
		if row.Stat.Reps != 3 || !mathx.Finite(row.Stat.Mean) || row.Stat.Mean <= 0 {
			t.Errorf("%+v", row)
		}
		if want := map[bool]float64{true: 2, false: 1}[strings.HasSuffix(row.Estimator, "p=2")]; row.P != want ||
			want == 2 && row.Truth != r.Settings[0].Truth2.Value {
			t.Errorf("%s: p %v, truth %v", row.Estimator, row.P, row.Truth)
		}
	}
	if row := r.LargeK[0]; row.Witness.Reps != 2 || !mathx.Finite(row.Witness.Mean, row.U.Mean, row.PlugIn.Mean) || !(row.Truth > 0) {
		t.Errorf("large K: %+v", row)
	}
	for _, row := range r.Calibrated {
		if row.Stat.Reps != 2 || !mathx.Finite(row.Stat.Mean) {
			t.Errorf("%+v", row)
		}
	}
	r2, _ := Convergence(context.Background(), ConvergenceOptions{Quick: true, Seed: 3, Workers: 1})
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(r2)
	if !bytes.Equal(a, b) {
		t.Error("results differ between worker counts")
	}
	dir := t.TempDir()
	files, err := Save(dir, "convergence", r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 8 {
		t.Errorf("wrote %v", files)
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "convergence.txt"))
	for _, want := range []string{"Ground truth", "kde loo", "binned doane", "crosses the truth", "reference", "witness", "u-statistic p=2", "4. Calibrated", "5. Many classes"} {
		if !strings.Contains(string(txt), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

// TestCrossings checks the interpolation of the truth crossings.
func TestCrossings(t *testing.T) {
	hs := []float64{0.01, 0.1, 1, 10}
	d, u := crossings(hs, []float64{3, 1, 1, 3}, 2)
	if math.Abs(d-math.Sqrt(0.01*0.1)) > 1e-12 || math.Abs(u-math.Sqrt(10)) > 1e-12 {
		t.Errorf("down %v up %v", d, u)
	}
	d, u = crossings(hs, []float64{1, 1, 1, 1}, 2)
	if !math.IsNaN(d) || !math.IsNaN(u) {
		t.Errorf("no crossing: %v %v", d, u)
	}
}

// TestBinnedVsKDEQuick runs the quick binned-vs-kde experiment on a
// synthetic 4-class set (the three-class filter and renormalisation, the
// rows, the slopes) and checks its errors.
func TestBinnedVsKDEQuick(t *testing.T) {
	f, y, _ := synth.Paper(4).Draw(2000, rand.New(rand.NewPCG(1, 1)))
	r, err := BinnedVsKDE(context.Background(), "synthetic", f, y, 4, BinnedVsKDEOptions{Quick: true, Classes: []int{3, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, l := range y {
		if l != 2 {
			want++
		}
	}
	if r.N != want || len(r.Rows) != 3*2*3 || len(r.Slopes) != 6 {
		t.Fatalf("n %d (want %d), %d rows, %d slopes", r.N, want, len(r.Rows), len(r.Slopes))
	}
	for _, s := range r.Slopes {
		if !(s.Slope < 0) {
			t.Errorf("%+v: the difference does not shrink with n", s)
		}
	}
	if _, err := BinnedVsKDE(context.Background(), "x", f, y, 4, BinnedVsKDEOptions{Classes: []int{0, 0, 1}}); err == nil {
		t.Error("repeated class accepted")
	}
	if _, err := BinnedVsKDE(context.Background(), "x", f, y, 4, BinnedVsKDEOptions{Classes: []int{0, 1}}); err == nil {
		t.Error("two classes accepted")
	}
}

// TestSharpnessQuick runs the quick sharpness experiment: sizes 32 to
// 1,024, finite rows, a ground truth with a small standard error, and
// determinism across worker counts; bad options are errors.
func TestSharpnessQuick(t *testing.T) {
	r, err := Sharpness(context.Background(), SharpnessOptions{Quick: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 6 || r.Rows[0].N != 32 || r.Rows[5].N != 1024 || !(r.Truth.SE < 1e-3) {
		t.Fatalf("%d rows, truth %v", len(r.Rows), r.Truth)
	}
	for _, row := range r.Rows {
		if row.Partial.Reps != 300 || !mathx.Finite(row.Partial.Mean, row.Debiased.Mean) {
			t.Errorf("%+v", row)
		}
	}
	r2, _ := Sharpness(context.Background(), SharpnessOptions{Quick: true, Seed: 2, Workers: 1})
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(r2)
	if !bytes.Equal(a, b) {
		t.Error("results differ between worker counts")
	}
	if _, err := Sharpness(context.Background(), SharpnessOptions{Location: 1.5}); err == nil {
		t.Error("location 1.5 accepted")
	}
}

// TestRealWitnessQuick runs the real-data comparison on the first 1,000
// embedded test predictions: the witness is clearly positive with the
// observed labels (the network is over-confident: ECE^KDE and binned agree
// on that) and near 0 with labels drawn from the predictions, where the
// plug-in still reads several hundredths; the table and determinism.
func TestRealWitnessQuick(t *testing.T) {
	s, err := demoSet("test")
	if err != nil {
		t.Fatal(err)
	}
	sets := []RealSet{{Name: "demo", Probs: s.Probs, Labels: s.Labels, K: s.K}}
	r, err := RealWitness(context.Background(), sets, RealWitnessOptions{Quick: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Labels != "observed" || r.Rows[1].Labels != "resampled" || r.Rows[0].N != 1000 {
		t.Fatalf("rows %+v", r.Rows)
	}
	obs, rs := r.Rows[0], r.Rows[1]
	if !(obs.Witness1.Mean > 0.02) || !(obs.Witness1.Mean < obs.PlugIn1.Mean) {
		t.Errorf("observed labels: witness %v, plug-in %v", obs.Witness1.Mean, obs.PlugIn1.Mean)
	}
	if math.Abs(rs.Witness1.Mean) > 0.02 || !(rs.PlugIn1.Mean > 0.03) {
		t.Errorf("resampled labels: witness %v (want |.| <= 0.02), plug-in %v", rs.Witness1.Mean, rs.PlugIn1.Mean)
	}
	r2, err := RealWitness(context.Background(), sets, RealWitnessOptions{Quick: true, Seed: 2, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(r2)
	if !bytes.Equal(a, b) {
		t.Error("results differ between worker counts")
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "witness CE_1") {
		t.Errorf("table: %v\n%s", err, buf.String())
	}
}
