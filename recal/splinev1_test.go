package recal

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
)

// splineV1Set is the deterministic set the old-format spline map in
// testdata/spline_v1.json was fitted on: 300 rows, K = 3, logits
// N(0, 1.5^2) plus 1.5 on the label (uniform), probabilities their softmax
// (computed here, so that the set does not depend on another package), and
// every tenth row's label redrawn so that the model is miscalibrated.
func splineV1Set() (probs []float64, labels []int) {
	const n, k = 300, 3
	rng := rand.New(rand.NewPCG(15, 4))
	probs, labels = make([]float64, n*k), make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(k)
		z := make([]float64, k)
		for c := range z {
			z[c] = 1.5 * rng.NormFloat64()
		}
		z[labels[i]] += 1.5
		m := math.Max(z[0], math.Max(z[1], z[2]))
		sum := 0.0
		for c := range z {
			z[c] = math.Exp(z[c] - m)
			sum += z[c]
		}
		for c := range z {
			probs[i*k+c] = z[c] / sum
		}
		if i%10 == 0 {
			labels[i] = rng.IntN(k)
		}
	}
	return probs, labels
}

// splineV1Rows are the probability rows whose old-format outputs are
// recorded in testdata/spline_v1_outputs.json: a row of the fit set (its
// top score is a validation score), rows inside the range, one near 1/K and
// one at 1.
func splineV1Rows() []float64 {
	p, _ := splineV1Set()
	return append(append([]float64(nil), p[6:9]...),
		0.5, 0.3, 0.2,
		0.2, 0.1, 0.7,
		0.34, 0.33, 0.33,
		0.05, 0.9, 0.05,
		0, 0, 1,
		0.45, 0.45, 0.1)
}

// splineV1Scores are the scores whose old-format top-2 and within-top-2
// curve values are recorded.
func splineV1Scores() []float64 {
	return []float64{0, 0.01, 0.1, 0.2, 0.3, 0.333, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1}
}

// splineV1Outputs is testdata/spline_v1_outputs.json: the old code's
// Calibrate output on splineV1Rows and its top-2 and within-top-2 curve
// values on splineV1Scores.
type splineV1Outputs struct {
	Probs      []float64 `json:"probs"`
	Calibrated []float64 `json:"calibrated"`
	Scores     []float64 `json:"scores"`
	Top2       []float64 `json:"top2"`
	WithinTop2 []float64 `json:"within_top2"`
}

// maxDiff returns the largest |a_i - b_i| (+Inf for different lengths).
func maxDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// probeScores returns scores to map: 2001 evenly spaced in [0, 1], every
// validation score of the curves of sp and the midpoints between them.
func probeScores(sp *Spline) []float64 {
	var s []float64
	for i := 0; i <= 2000; i++ {
		s = append(s, float64(i)/2000)
	}
	for _, c := range []*SplineCurve{sp.Top1, sp.Top2, sp.WithinTop2} {
		for i, v := range c.Scores {
			s = append(s, v)
			if i > 0 {
				s = append(s, (v+c.Scores[i-1])/2)
			}
		}
	}
	return s
}

// curveDiff returns the largest difference between the curves of a and b
// over the scores.
func curveDiff(a, b *Spline, scores []float64) float64 {
	d := 0.0
	for _, s := range scores {
		for _, p := range [][2]*SplineCurve{{a.Top1, b.Top1}, {a.Top2, b.Top2}, {a.WithinTop2, b.WithinTop2}} {
			d = math.Max(d, math.Abs(p[0].Map(s)-p[1].Map(s)))
		}
	}
	return d
}

// TestSplineV1FileLoads : testdata/spline_v1.json, a
// spline map saved by the code before the compact format (every curve
// with its "calibrated" array; fitted on splineV1Set with the default
// options), still loads and reproduces the outputs recorded then
// (Calibrate and the top-2 and within-top-2 curves, 1e-12; they are in fact
// identical). The same fit made now saves no "calibrated" array, reloads
// to an identical map, and maps every probe score as the old file does
// (1e-12); the old map saved again loads with the same outputs.
func TestSplineV1FileLoads(t *testing.T) {
	b, err := os.ReadFile("testdata/spline_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"calibrated"`)) {
		t.Fatal("testdata/spline_v1.json is not in the old format")
	}
	c, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	old := c.(*Spline)
	var rec splineV1Outputs
	ob, err := os.ReadFile("testdata/spline_v1_outputs.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ob, &rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Probs, splineV1Rows()) || !slices.Equal(rec.Scores, splineV1Scores()) {
		t.Fatal("the recorded inputs are not splineV1Rows and splineV1Scores")
	}
	got, err := old.Calibrate(rec.Probs, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	var top2, within []float64
	for _, s := range rec.Scores {
		top2 = append(top2, old.Top2.Map(s))
		within = append(within, old.WithinTop2.Map(s))
	}
	for _, d := range []struct {
		what      string
		got, want []float64
	}{{"Calibrate", got, rec.Calibrated}, {"top-2 curve", top2, rec.Top2}, {"within-top-2 curve", within, rec.WithinTop2}} {
		if m := maxDiff(d.got, d.want); !(m <= 1e-12) {
			t.Errorf("old file, %s: %v, recorded %v (max diff %.2g)", d.what, d.got, d.want, m)
		}
	}

	probs, labels := splineV1Set()
	fit, err := FitSpline(probs, labels, 3, nil, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Save(&buf, fit); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("calibrated")) {
		t.Error("the new format still writes the calibrated arrays")
	}
	t.Logf("300 rows, K = 3: old file %d bytes, new %d", len(b), buf.Len())
	loaded, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, Calibrator(fit)) {
		t.Error("the reloaded fit differs from the fit")
	}
	probe := probeScores(old)
	for _, m := range []*Spline{fit, loaded.(*Spline)} {
		d := curveDiff(m, old, probe)
		if !(d <= 1e-12) {
			t.Errorf("new map vs old file: curves differ by %.2g on %d scores", d, len(probe))
		}
		t.Logf("new map vs old file: curves differ by %.2g on %d scores", d, len(probe))
		p1, err1 := m.Calibrate(probs, nil, 3)
		p2, err2 := old.Calibrate(probs, nil, 3)
		if err1 != nil || err2 != nil || !(maxDiff(p1, p2) <= 1e-12) {
			t.Errorf("new map vs old file on the fit rows: max diff %.2g (%v, %v)", maxDiff(p1, p2), err1, err2)
		}
	}
	buf.Reset()
	if err := Save(&buf, old); err != nil {
		t.Fatal(err)
	}
	resaved, err := Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if d := curveDiff(resaved.(*Spline), old, probe); !(d <= 1e-12) || bytes.Contains(buf.Bytes(), []byte("calibrated")) {
		t.Errorf("the old map saved again: curves differ by %.2g", d)
	}
}

// legacyCurve is the JSON layout of a spline curve before the compact
// format (every field, "calibrated" included).
type legacyCurve struct {
	Knots             int       `json:"knots"`
	KnotValues        []float64 `json:"knot_values"`
	SecondDerivatives []float64 `json:"second_derivatives"`
	Scores            []float64 `json:"scores"`
	Calibrated        []float64 `json:"calibrated"`
}

// TestSplineMapSize : the 6-knot spline map of the
// 5,000-row demo validation set (K = 10) is written without the
// recalibrated values and with its arrays on one line: under 45 % of the old
// format's size (712,870 bytes), at most 21 bytes per stored validation
// score (3 curves × 5,000), and under 4 KB once its three score arrays are
// left out. The scores themselves cannot go: a new score is placed among
// them to find its fractile, and no summary of them maps every score as
// they do.
func TestSplineMapSize(t *testing.T) {
	val := loadSplit(t, logitDirs["cifar10_resnet110-brier"], "val")
	sp, err := FitSpline(val.Probs, val.Labels, val.K, nil, SplineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Top1.Knots != 6 || val.N != 5000 {
		t.Fatalf("%d knots, %d rows", sp.Top1.Knots, val.N)
	}
	var buf bytes.Buffer
	if err := Save(&buf, sp); err != nil {
		t.Fatal(err)
	}
	legacy := func(c *SplineCurve) legacyCurve {
		return legacyCurve{c.Knots, c.KnotValues, c.SecondDerivatives, c.Scores, c.Calibrated}
	}
	ob, err := json.MarshalIndent(struct {
		Header
		Top1       legacyCurve `json:"top1"`
		Top2       legacyCurve `json:"top2"`
		WithinTop2 legacyCurve `json:"within_top2"`
	}{sp.Header, legacy(sp.Top1), legacy(sp.Top2), legacy(sp.WithinTop2)}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	old := len(ob) + 1
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"top1", "top2", "within_top2"} {
		delete(m[c].(map[string]any), "scores")
	}
	rest, _ := json.MarshalIndent(m, "", " ")
	stored := 3 * val.N
	t.Logf("demo spline map: old format %d bytes, new %d (%.1f bytes per stored score); without the scores %d bytes", old, buf.Len(), float64(buf.Len())/float64(stored), len(rest))
	if math.Abs(float64(old)/712870-1) > 0.01 {
		t.Errorf("old format %d bytes, measured 712,870 with the old code", old)
	}
	if buf.Len() > old*45/100 || buf.Len() > 21*stored || len(rest) > 4096 {
		t.Errorf("new format %d bytes (old %d, %d stored scores), %d without the scores", buf.Len(), old, stored, len(rest))
	}
}
