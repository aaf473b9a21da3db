package metric

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/internal/testenv"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/mathx"
)

// weightedSample draws n predictions of K classes (softmax of logits
// rounded to multiples of 1/2, so that many scores tie), labels drawn from
// the predictions, and integer weights in {0, 1, 2, 3}.
func weightedSample(seed uint64, n, k int) (probs, logits []float64, labels []int, w []float64) {
	rng := rand.New(rand.NewPCG(seed, 16))
	probs, logits, labels, w = make([]float64, n*k), make([]float64, n*k), make([]int, n), make([]float64, n)
	for i := range labels {
		z := logits[i*k : (i+1)*k]
		for c := range z {
			z[c] = math.Round(3*rng.NormFloat64()) / 2
		}
		row := probs[i*k : (i+1)*k]
		mathx.Softmax(row, z)
		u, acc := rng.Float64(), 0.0
		labels[i] = k - 1
		for c, v := range row {
			if acc += v; u < acc {
				labels[i] = c
				break
			}
		}
		w[i] = float64(rng.IntN(4))
	}
	testenv.ZeroOne(w)
	return probs, logits, labels, w
}

// repeatRows returns the rows (k entries each) of x with row i repeated
// w_i times (weight-0 rows dropped), in order.
func repeatRows[T any](x []T, k int, w []float64) []T {
	var out []T
	for i, c := range w {
		for range int(c) {
			out = append(out, x[i*k:(i+1)*k]...)
		}
	}
	return out
}

// relTol is the tolerance of the repeated-rows identity: the weighted sums
// add w_i x_i once where the repeated rows add x_i w_i times, so they differ
// by rounding only.
const relTol = 1e-12

// closeRel reports whether a and b agree within relTol relative (or 1e-15
// absolute, for values at 0) and returns the relative difference.
func closeRel(a, b float64) (bool, float64) {
	d := math.Abs(a - b)
	scale := math.Max(math.Abs(a), math.Abs(b))
	rel := 0.0
	if scale > 0 {
		rel = d / scale
	}
	return d <= 1e-15 || rel <= relTol, rel
}

// TestWeightedEqualsRepeatedRows: for every metric for which it holds,
// integer weights in {0, 1, 2, 3} give the value of the data with each row
// repeated w_i times (weight-0 rows dropped), within 1e-12 relative. The
// data have many tied scores, so the stable orders of KS and the tied
// order statistics of the equal-mass edges are exercised.
func TestWeightedEqualsRepeatedRows(t *testing.T) {
	const n, k = 300, 4
	probs, logits, labels, w := weightedSample(1, n, k)
	rp, rz, ry := repeatRows(probs, k, w), repeatRows(logits, k, w), repeatRows(labels, 1, w)
	worst := 0.0
	check := func(name string, weighted, repeated float64) {
		t.Helper()
		ok, rel := closeRel(weighted, repeated)
		worst = math.Max(worst, rel)
		if !ok || math.IsNaN(weighted) {
			t.Errorf("%s: weighted %.17g, repeated rows %.17g (relative difference %.3g)", name, weighted, repeated, rel)
		}
	}
	check("Brier", Brier(probs, labels, k, w), Brier(rp, ry, k, nil))
	check("NLL probabilities", NLL(probs, nil, labels, k, w), NLL(rp, nil, ry, k, nil))
	check("NLL logits", NLL(nil, logits, labels, k, w), NLL(nil, rz, ry, k, nil))
	check("Accuracy", Accuracy(probs, labels, k, w), Accuracy(rp, ry, k, nil))
	check("Confidence", Confidence(probs, labels, k, w), Confidence(rp, ry, k, nil))

	options := map[string]BinOptions{
		"equal-width 10":          {Bins: 10},
		"equal-width 7 open-low":  {Bins: 7, OpenLow: true},
		"equal-mass 10":           {Binning: EqualMass, Bins: 10},
		"equal-mass 23":           {Binning: EqualMass, Bins: 23},
		"equal-width sqrt":        {Rule: Sqrt},
		"equal-mass sqrt":         {Binning: EqualMass, Rule: Sqrt},
		"equal-width doane":       {Rule: Doane},
		"equal-mass doane":        {Binning: EqualMass, Rule: Doane},
		"equal-width 3 canonical": {Bins: 3},
	}
	for name, o := range options {
		bw, err := TopLabelBins(probs, labels, k, w, o)
		if err != nil {
			t.Fatal(err)
		}
		br, err := TopLabelBins(rp, ry, k, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(bw.Edges, br.Edges) {
			t.Errorf("%s: edges %v, repeated rows %v", name, bw.Edges, br.Edges)
			continue
		}
		check(name+" top-label ECE_1", bw.ECE(1), br.ECE(1))
		check(name+" top-label ECE_2^2", bw.ECE(2), br.ECE(2))
		check(name+" top-label MCE", bw.MCE(), br.MCE())
		check(name+" top-label debiased L2", bw.DebiasedL2(), br.DebiasedL2())
		for b := range bw.Mass {
			if bw.Mass[b] != float64(br.Count[b]) {
				t.Errorf("%s: bin %d mass %v, repeated rows count %d", name, b, bw.Mass[b], br.Count[b])
			}
		}

		cw, err := ClassWiseBins(probs, labels, k, w, o)
		if err != nil {
			t.Fatal(err)
		}
		cr, err := ClassWiseBins(rp, ry, k, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name string
			f    func(*Bins) float64
		}{{"ECE_1", func(b *Bins) float64 { return b.ECE(1) }}, {"ECE_2^2", func(b *Bins) float64 { return b.ECE(2) }},
			{"MCE", (*Bins).MCE}, {"debiased L2", (*Bins).DebiasedL2}} {
			a, b := ClassWise(cw, f.f), ClassWise(cr, f.f)
			check(name+" class-wise "+f.name, a.Value, b.Value)
			for c := range a.PerClass {
				check(fmt.Sprintf("%s class %d %s", name, c, f.name), a.PerClass[c], b.PerClass[c])
			}
		}

		for _, p := range []float64{1, 2} {
			gw, err := Canonical(probs, labels, k, p, w, o)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := Canonical(rp, ry, k, p, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if gw.B != gr.B || gw.Cells != gr.Cells {
				t.Errorf("%s canonical: B %d, %d cells; repeated rows B %d, %d cells", name, gw.B, gw.Cells, gr.B, gr.Cells)
			}
			check(fmt.Sprintf("%s canonical p=%v", name, p), gw.Value, gr.Value)
			check(name+" canonical MCE", gw.MCE, gr.MCE)
		}
	}

	for r := 1; r <= 2; r++ {
		s, o := TopR(probs, labels, k, r)
		rs, ro := TopR(rp, ry, k, r)
		a, ca := KS(s, o, true, w)
		b, cb := KS(rs, ro, true, nil)
		check(fmt.Sprintf("KS top-%d", r), a, b)
		check(fmt.Sprintf("KS top-%d curve end (pred)", r), ca.Pred[n-1], cb.Pred[len(cb.Pred)-1])
		check(fmt.Sprintf("KS top-%d curve end (obs)", r), ca.Obs[n-1], cb.Obs[len(cb.Obs)-1])
		s, o = WithinTopR(probs, labels, k, r)
		rs, ro = WithinTopR(rp, ry, k, r)
		a, _ = KS(s, o, false, w)
		b, _ = KS(rs, ro, false, nil)
		check(fmt.Sprintf("KS within-top-%d", r), a, b)
	}
	pw, pr := ClassWiseKS(probs, labels, k, w), ClassWiseKS(rp, ry, k, nil)
	check("class-wise KS", pw.Value, pr.Value)
	for c := range pw.PerClass {
		check(fmt.Sprintf("class-wise KS class %d", c), pw.PerClass[c], pr.PerClass[c])
	}

	for _, width := range []float64{0.1, DefaultMMCEWidth} {
		a, sa := TopLabelMMCE(probs, labels, k, width, nil, w)
		b, sb := TopLabelMMCE(rp, ry, k, width, nil, nil)
		check(fmt.Sprintf("MMCE width %v", width), a, b)
		check(fmt.Sprintf("MMCE^2 width %v", width), sa, sb)
	}
	t.Logf("largest relative difference, weighted against repeated rows: %.3g", worst)
}

// TestWeightedResampleShortcuts: the idx-based shortcuts of the bootstrap
// (Assignment.Summarize, Cells.Estimate, SortedKS.KSResample) give the
// weighted statistic of the resampled rows with their weights carried
// (Resample(w, 1, idx)), within 1e-12 relative.
func TestWeightedResampleShortcuts(t *testing.T) {
	const n, k = 200, 3
	probs, _, labels, w := weightedSample(2, n, k)
	for i := range w {
		w[i] += 0.25 * float64(i%3) // not integers
	}
	s, o := TopR(probs, labels, k, 1)
	o1 := BinOptions{Bins: 10}
	a, err := AssignBins(s, w, o1)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := AssignCells(probs, labels, k, w, BinOptions{Bins: 3})
	if err != nil {
		t.Fatal(err)
	}
	sorted := NewSortedKS(s, o, w)
	rng := rand.New(rand.NewPCG(3, 3))
	idx := make([]int, n)
	for rep := 0; rep < 5; rep++ {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		// In increasing order, so that the resample's stable sort keeps
		// tied scores in the input order, as SortedKS does.
		slices.Sort(idx)
		rs, ro, rw := Resample(s, 1, idx), Resample(o, 1, idx), Resample(w, 1, idx)
		direct, err := BinScores(rs, ro, rw, o1)
		if err != nil {
			t.Fatal(err)
		}
		short := a.Summarize(s, o, idx, w)
		for _, c := range []struct {
			name string
			a, b float64
		}{
			{"ECE_1", short.ECE(1), direct.ECE(1)},
			{"MCE", short.MCE(), direct.MCE()},
			{"debiased L2", short.DebiasedL2(), direct.DebiasedL2()},
			{"canonical", cells.Estimate(1, idx).Value, mustCanonical(t, Resample(probs, k, idx), Resample(labels, 1, idx), k, rw).Value},
			{"KS", sorted.KSResample(Counts(n, idx)), ksOf(rs, ro, rw)},
		} {
			if ok, rel := closeRel(c.a, c.b); !ok {
				t.Errorf("resample %d %s: shortcut %.17g, direct %.17g (relative %.3g)", rep, c.name, c.a, c.b, rel)
			}
		}
	}
	if Resample[float64](nil, 1, idx) != nil {
		t.Error("Resample of nil weights is not nil")
	}
}

func mustCanonical(t *testing.T, p []float64, y []int, k int, w []float64) *CanonicalBinned {
	t.Helper()
	c, err := Canonical(p, y, k, 1, w, BinOptions{Bins: 3})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ksOf(s, o, w []float64) float64 {
	v, _ := KS(s, o, false, w)
	return v
}

// TestWeightedHand checks small weighted examples computed by hand.
func TestWeightedHand(t *testing.T) {
	// Brier, K = 2: the rows' terms are 0.04 + 0.04 = 0.08, 0.36 + 0.36 =
	// 0.72 and 0.01 + 0.01 = 0.02; with weights 1, 0.5, 2 the mean is
	// (0.08 + 0.36 + 0.04) / 3.5 = 0.48 / 3.5.
	probs := []float64{0.8, 0.2, 0.4, 0.6, 0.1, 0.9}
	labels := []int{0, 0, 1}
	near(t, "weighted Brier", Brier(probs, labels, 2, []float64{1, 0.5, 2}), 0.48/3.5, 1e-15)
	// NLL: -(1 log 0.8 + 0.5 log 0.4 + 2 log 0.9) / 3.5.
	near(t, "weighted NLL", NLL(probs, nil, labels, 2, []float64{1, 0.5, 2}), -(math.Log(0.8)+0.5*math.Log(0.4)+2*math.Log(0.9))/3.5, 1e-15)
	// Accuracy: rows 1 and 3 are right: (1 + 2) / 3.5; confidence (0.8 +
	// 0.3 + 1.8) / 3.5.
	near(t, "weighted accuracy", Accuracy(probs, labels, 2, []float64{1, 0.5, 2}), 3/3.5, 1e-15)
	near(t, "weighted confidence", Confidence(probs, labels, 2, []float64{1, 0.5, 2}), 2.9/3.5, 1e-15)

	// Binned ECE with 2 equal-width bins. Bin 0 = [0, 0.5]: scores 0.2
	// (weight 1, outcome 0) and 0.4 (weight 3, outcome 1): W_0 = 4, score
	// (0.2 + 1.2)/4 = 0.35, freq 3/4, gap 0.4. Bin 1: 0.7 and 0.9 (weight 2
	// each, outcomes 1 and 0): W_1 = 4, score 0.8, freq 0.5, gap 0.3. W = 8.
	s := []float64{0.2, 0.4, 0.7, 0.9}
	y := []float64{0, 1, 1, 0}
	w := []float64{1, 3, 2, 2}
	bs, err := BinScores(s, y, w, BinOptions{Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "bin 0 mass", bs.Mass[0], 4, 0)
	near(t, "bin 0 score", bs.Score[0], 0.35, 1e-15)
	near(t, "bin 0 freq", bs.Freq[0], 0.75, 0)
	near(t, "ECE_1", bs.ECE(1), 0.5*0.4+0.5*0.3, 1e-15)
	near(t, "ECE_2^2", bs.ECE(2), 0.5*0.16+0.5*0.09, 1e-15)
	near(t, "MCE", bs.MCE(), 0.4, 1e-15)
	// Debiased, the masses read as counts of the weights' normalised
	// form (mean 1: W_b Pos / W = 2 each): 0.5 (0.16 - 0.75 * 0.25 / 1) +
	// 0.5 (0.09 - 0.5 * 0.5 / 1); the same for the weights times 3.
	near(t, "debiased L2", bs.DebiasedL2(), 0.5*(0.16-0.1875)+0.5*(0.09-0.25), 1e-15)
	bs3, _ := BinScores(s, y, []float64{3, 9, 6, 6}, BinOptions{Bins: 2})
	near(t, "debiased L2, weights x 3", bs3.DebiasedL2(), 0.5*(0.16-0.1875)+0.5*(0.09-0.25), 1e-15)

	// Equal-mass edges: scores 0.1, 0.4, 0.3 with weights 1, 2, 1 read in
	// their normalised form over the 3 rows of positive weight (0.75, 1.5,
	// 0.75; cumulative 0.75, 1.5, 3 in score order 0.1, 0.3, 0.4): the
	// median at position 1 is 0.3. A weight-0 score (0.9) is no order
	// statistic and no row.
	bs, err = BinScores([]float64{0.1, 0.4, 0.3, 0.9}, []float64{0, 1, 0, 1}, []float64{1, 2, 1, 0}, BinOptions{Binning: EqualMass, Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "weighted equal-mass edge 0", bs.Edges[0], 0.1, 0)
	near(t, "weighted equal-mass edge 1", bs.Edges[1], 0.3, 1e-15)
	near(t, "weighted equal-mass edge 2", bs.Edges[2], 0.4, 0)
	// Non-integer weights 0.5, 1, 0.5 read in their normalised form 0.75,
	// 1.5, 0.75 (mean 1, W = 3): the median at position 1, the order
	// statistic at 1 is 0.3 (cumulative 2.25 > 1).
	bs, err = BinScores([]float64{0.1, 0.3, 0.4}, []float64{0, 1, 0}, []float64{0.5, 1, 0.5}, BinOptions{Binning: EqualMass, Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	near(t, "fractional-weight equal-mass edge 1", bs.Edges[1], 0.3, 1e-15)
	// Weights summing to 1 are read as 0.6, 0.9, 1.5: the edges of
	// weights on any scale.
	bs, err = BinScores([]float64{0.1, 0.3, 0.4}, []float64{0, 1, 0}, []float64{0.2, 0.3, 0.5}, BinOptions{Binning: EqualMass, Bins: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bs.Edges, []float64{0.1, 0.3, 0.4}) {
		t.Errorf("edges for W = 1: %v", bs.Edges)
	}

	// Weights 1 everywhere reproduce the unweighted bins exactly.
	probs2, _, labels2, _ := weightedSample(4, 100, 3)
	ones := make([]float64, 100)
	for i := range ones {
		ones[i] = 1
	}
	for _, o := range []BinOptions{{Binning: EqualMass, Bins: 10}, {Rule: Doane}, {Rule: Sqrt, Binning: EqualMass}} {
		a, _ := TopLabelBins(probs2, labels2, 3, ones, o)
		b, _ := TopLabelBins(probs2, labels2, 3, nil, o)
		if !slices.Equal(a.Edges, b.Edges) || a.ECE(1) != b.ECE(1) || a.DebiasedL2() != b.DebiasedL2() {
			t.Errorf("%+v: unit weights give edges %v, ECE %v; nil %v, ECE %v", o, a.Edges, a.ECE(1), b.Edges, b.ECE(1))
		}
	}
}

// TestWeightedMMCEBrute checks the weighted MMCE against the weighted
// double loop (1/W^2) sum_{i,j} w_i w_j e_i e_j k(r_i, r_j) with i = j
// included, for non-integer weights, within 1e-12 relative, and its
// gradient against central differences (step 1e-6, tolerance 1e-6).
func TestWeightedMMCEBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const n = 60
	r, c, w := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range r {
		r[i] = math.Round(rng.Float64()*20) / 20 // ties
		if rng.Float64() < r[i]*0.8 {
			c[i] = 1
		}
		w[i] = rng.Float64() * 3
	}
	w[3] = 0
	brute := func(r []float64) float64 {
		sum, W := 0.0, 0.0
		for i := range r {
			W += w[i]
			for j := range r {
				sum += w[i] * w[j] * (c[i] - r[i]) * (c[j] - r[j]) * math.Exp(-math.Abs(r[i]-r[j])/0.4)
			}
		}
		return sum / (W * W)
	}
	grad := make([]float64, n)
	v, sq := MMCE(r, c, 0.4, grad, w)
	if ok, rel := closeRel(sq, brute(r)); !ok {
		t.Errorf("squared %.17g, brute force %.17g (relative %.3g)", sq, brute(r), rel)
	}
	if math.Abs(v-math.Sqrt(sq)) > 1e-15 {
		t.Errorf("value %v, sqrt(squared) %v", v, math.Sqrt(sq))
	}
	// Central differences away from ties: move one point of a unique r.
	x := slices.Clone(r)
	for i := range x {
		x[i] += 1e-4 * float64(i) / n // break the ties, keep the order
	}
	_, _ = MMCE(x, c, 0.4, grad, w)
	const h = 1e-7
	for i := range x {
		up, down := slices.Clone(x), slices.Clone(x)
		up[i] += h
		down[i] -= h
		fd := (math.Sqrt(brute(up)) - math.Sqrt(brute(down))) / (2 * h)
		if math.Abs(fd-grad[i]) > 1e-6 {
			t.Errorf("gradient %d: %v, central difference %v", i, grad[i], fd)
		}
	}
	if grad[3] != 0 && math.Abs(grad[3]) > 1e-12 {
		// A weight-0 point still moves the others' kernel terms only
		// through its own zero weight: its derivative is 0.
		t.Errorf("gradient of a weight-0 point %v", grad[3])
	}
}

// TestBadWeights: every function of the package that returns an error
// refuses negative, NaN, infinite, all-zero and wrongly sized weights with
// an error wrapping data.ErrWeights; those that return no error panic on
// a wrong length.
func TestBadWeights(t *testing.T) {
	probs, _, labels, _ := weightedSample(6, 10, 3)
	s, o := TopR(probs, labels, 3, 1)
	bad := map[string][]float64{
		"negative":     {1, 1, -1, 1, 1, 1, 1, 1, 1, 1},
		"NaN":          {1, 1, 1, math.NaN(), 1, 1, 1, 1, 1, 1},
		"Inf":          {1, math.Inf(1), 1, 1, 1, 1, 1, 1, 1, 1},
		"all zero":     make([]float64, 10),
		"wrong length": {1, 1, 1},
	}
	for name, w := range bad {
		for fname, f := range map[string]func() error{
			"BinScores":     func() error { _, err := BinScores(s, o, w, BinOptions{}); return err },
			"AssignBins":    func() error { _, err := AssignBins(s, w, BinOptions{Binning: EqualMass}); return err },
			"TopLabelBins":  func() error { _, err := TopLabelBins(probs, labels, 3, w, BinOptions{}); return err },
			"ClassWiseBins": func() error { _, err := ClassWiseBins(probs, labels, 3, w, BinOptions{}); return err },
			"Canonical":     func() error { _, err := Canonical(probs, labels, 3, 1, w, BinOptions{}); return err },
			"AssignCells":   func() error { _, err := AssignCells(probs, labels, 3, w, BinOptions{Rule: Doane}); return err },
		} {
			err := f()
			if !errors.Is(err, data.ErrWeights) || !errors.Is(err, mathx.ErrWeights) {
				t.Errorf("%s, %s weights: error %v, want one wrapping data.ErrWeights", fname, name, err)
			}
		}
	}
	w := []float64{1, 2}
	for name, f := range map[string]func(){
		"Brier":        func() { Brier(probs, labels, 3, w) },
		"NLL":          func() { NLL(probs, nil, labels, 3, w) },
		"Accuracy":     func() { Accuracy(probs, labels, 3, w) },
		"Confidence":   func() { Confidence(probs, labels, 3, w) },
		"KS":           func() { KS(s, o, false, w) },
		"ClassWiseKS":  func() { ClassWiseKS(probs, labels, 3, w) },
		"NewSortedKS":  func() { NewSortedKS(s, o, w) },
		"MMCE":         func() { MMCE(s, o, 0.4, nil, w) },
		"TopLabelMMCE": func() { TopLabelMMCE(probs, labels, 3, 0.4, nil, w) },
		"Summarize": func() {
			a, _ := AssignBins(s, nil, BinOptions{})
			a.Summarize(s, o, nil, w)
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "metric: "+name+": length mismatch") {
					t.Errorf("%s: recovered %v, want a length-mismatch panic", name, r)
				}
			}()
			f()
		}()
	}
}

// TestWeightedBinRules: the Doane and Sqrt rules with integer weights give
// the number of bins of the repeated rows, on 200 small skewed samples
// (where the skewness term moves the count).
func TestWeightedBinRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	differ := 0
	for rep := 0; rep < 200; rep++ {
		n := 3 + rng.IntN(20)
		x, w := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = math.Pow(rng.Float64(), 4) // skewed
			w[i] = float64(rng.IntN(4))
		}
		w[0] = 1
		testenv.ZeroOne(w)
		rx := repeatRows(x, 1, w)
		for _, o := range []BinOptions{{Rule: Doane}, {Rule: Sqrt}} {
			a, _ := o.numBins(x, w)
			b, _ := o.numBins(rx, nil)
			if a != b {
				t.Errorf("%v rule, weights %v: %d bins, repeated rows %d", o.Rule, w, a, b)
			}
		}
		if a, _ := (BinOptions{Rule: Doane}).numBins(x, nil); a != doaneBins(rx, nil) {
			differ++
		}
	}
	if differ < 50 {
		t.Errorf("the weights change the Doane count in only %d of 200 samples: the test cannot tell weighted from unweighted", differ)
	}
}
