package train

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	G "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"

	"gonum.org/v1/gonum/mathext"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// TestLgamma compares the graph's Lgamma with math.Lgamma on [0.5, 1e4]
// (relative 1e-13).
func TestLgamma(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	xs := []float64{0.5, 0.9, 1, 1.5, 2, 3.7, 10, 55.5, 101, 1234.5, 1e4}
	out, err := G.MustNewExec(backend, func(x *G.Node) *G.Node { return Lgamma(x) }).Exec(xs)
	if err != nil {
		t.Fatal(err)
	}
	got := out[0].Value().([]float64)
	for i, x := range xs {
		want, _ := math.Lgamma(x)
		if math.Abs(got[i]-want) > 1e-13*math.Max(1, math.Abs(want)) {
			t.Errorf("Lgamma(%v) = %v, math.Lgamma %v", x, got[i], want)
		}
	}
}

// TestDigamma checks the graph's Digamma against exact values, psi(n) =
// H_(n-1) - gamma and psi(n + 1/2) = 2 H_(2n) - H_n - gamma - 2 log 2, and
// the recurrence psi(x + 1) - psi(x) = 1/x at non-integers (absolute
// 1e-12; gonum's mathext.Digamma is off by 5e-11 at 7), and against
// mathext.Digamma within its own accuracy (1e-9) on [1, 1e5].
func TestDigamma(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	exec := G.MustNewExec(backend, func(x *G.Node) *G.Node { return Digamma(x) })
	psi := func(xs []float64) []float64 {
		out, err := exec.Exec(xs)
		if err != nil {
			t.Fatal(err)
		}
		return out[0].Value().([]float64)
	}
	harmonic := func(n int) float64 {
		s := 0.0
		for k := 1; k <= n; k++ {
			s += 1 / float64(k)
		}
		return s
	}
	const gamma = 0.57721566490153286061
	var xs, want []float64
	for _, n := range []int{1, 2, 3, 6, 7, 10, 40} {
		xs, want = append(xs, float64(n)), append(want, harmonic(n-1)-gamma)
		xs, want = append(xs, float64(n)+0.5), append(want, 2*harmonic(2*n)-harmonic(n)-gamma-2*math.Ln2)
	}
	for i, v := range psi(xs) {
		if math.Abs(v-want[i]) > 1e-12 {
			t.Errorf("Digamma(%v) = %.16g, exact %.16g", xs[i], v, want[i])
		}
	}
	xs = []float64{1.001, 3.3, 6.9, 55.5, 1234.5}
	next := make([]float64, len(xs))
	for i, x := range xs {
		next[i] = x + 1
	}
	a, b := psi(xs), psi(next)
	for i, x := range xs {
		if math.Abs(b[i]-a[i]-1/x) > 1e-12 {
			t.Errorf("psi(%v + 1) - psi(%v) = %v, want %v", x, x, b[i]-a[i], 1/x)
		}
		if math.Abs(a[i]-mathext.Digamma(x)) > 1e-9 {
			t.Errorf("Digamma(%v) = %v, mathext %v", x, a[i], mathext.Digamma(x))
		}
	}
}

// kdeAutodiff is the KDE term written as a plain graph and left to
// automatic differentiation (the first implementation of KDECanonical): an
// independent check of kdeGradient, and the baseline of BenchmarkLoss.
func kdeAutodiff(logits, onehot, h *G.Node, p float64) *G.Node {
	b := logits.Shape().Dimensions[0]
	f := G.Softmax(logits, -1)
	alpha := G.AddScalar(G.Div(f, h), 1)
	logB := G.Sub(G.ReduceSum(Lgamma(alpha), -1), Lgamma(G.ReduceSum(alpha, -1)))
	lk := G.Sub(G.Div(G.MatMul(G.LogSoftmax(logits, -1), G.Transpose(f, 0, 1)), h), G.InsertAxes(logB, 0))
	r := G.MatMul(G.MaskedSoftmax(lk, G.LogicalNot(G.Diagonal(logits.Graph(), b)), -1), onehot)
	e := G.Abs(G.Sub(r, f))
	if p != 1 {
		e = G.Pow(e, G.ConstAs(e, p))
	}
	return G.DivScalar(G.ReduceAllSum(e), float64(b))
}

// batch draws B logits of K classes (scale 2) and labels; classes listed
// in missing never occur as labels.
func batch(rng *rand.Rand, b, k int, missing ...int) ([][]float64, []int, [][]float64) {
	logits, onehot := make([][]float64, b), make([][]float64, b)
	labels := make([]int, b)
	for j := range logits {
		logits[j], onehot[j] = make([]float64, k), make([]float64, k)
		for c := range logits[j] {
			logits[j][c] = 2 * rng.NormFloat64()
		}
		for {
			labels[j] = rng.IntN(k)
			ok := true
			for _, m := range missing {
				ok = ok && labels[j] != m
			}
			if ok {
				break
			}
		}
		onehot[j][labels[j]] = 1
	}
	return logits, labels, onehot
}

// TestKDECanonicalGraph: the graph's value equals kde.Estimate (relative
// 1e-10) and its written-out gradient equals kde.LogitGradient (the
// foundation's exact gradient, relative 1e-8 of the largest entry), the
// automatic differentiation of the plain graph (kdeAutodiff, 1e-8) and
// central finite differences of the graph value (1e-6), for p = 1 and 2,
// fixed bandwidths and the training path's per-batch LOO bandwidth (h = 0
// in the table; the reference then uses kde.SelectBandwidth's choice),
// including batches in which classes have no sample.
func TestKDECanonicalGraph(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for _, tc := range []struct {
		b, k    int
		h, p    float64
		missing []int
	}{{32, 3, 0.1, 1, nil}, {48, 5, 0.05, 2, nil}, {40, 6, 0.2, 1, []int{1, 4}}, {64, 5, 0, 1, []int{2}}, {64, 26, 0, 1, nil}} {
		logits, labels, onehot := batch(rng, tc.b, tc.k, tc.missing...)
		exec := G.MustNewExec(backend, func(lg, oh *G.Node) (*G.Node, *G.Node, *G.Node) {
			h := G.Scalar(lg.Graph(), dtypes.Float64, tc.h)
			if tc.h == 0 {
				h = LOOBandwidth(lg, kde.DefaultGrid()) // the training path's per-batch choice
			}
			v := KDECanonical(lg, oh, h, tc.p)
			return v, G.Gradient(v, lg)[0], G.Gradient(kdeAutodiff(lg, oh, h, tc.p), lg)[0]
		})
		var auto [][]float64
		value := func(lg [][]float64) (float64, [][]float64) {
			out, err := exec.Exec(tensors.FromValue(lg), tensors.FromValue(onehot))
			if err != nil {
				t.Fatal(err)
			}
			auto = out[2].Value().([][]float64)
			return out[0].Value().(float64), out[1].Value().([][]float64)
		}
		v, g := value(logits)
		worstAuto := 0.0
		for j := range g {
			for c := range g[j] {
				worstAuto = math.Max(worstAuto, math.Abs(g[j][c]-auto[j][c]))
			}
		}
		flat := make([]float64, 0, tc.b*tc.k)
		for _, row := range logits {
			flat = append(flat, row...)
		}
		h := tc.h
		if h == 0 {
			probs := make([]float64, len(flat))
			for j := 0; j < tc.b; j++ {
				data.Softmax(probs[j*tc.k:(j+1)*tc.k], flat[j*tc.k:(j+1)*tc.k])
			}
			cv, err := kde.SelectBandwidth(context.Background(), kde.Canonical, probs, labels, tc.k, nil, kde.BandwidthOptions{NoRefine: true})
			if err != nil {
				t.Fatal(err)
			}
			h = cv.Bandwidth
		}
		wv, wg, err := kde.LogitGradient(context.Background(), nil, kde.Canonical, flat, labels, tc.k, tc.p, nil, kde.Options{Bandwidth: h})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v-wv) > 1e-10*wv || math.IsNaN(v) {
			t.Errorf("%+v: graph value %v, kde %v", tc, v, wv)
		}
		scale := 0.0
		for _, x := range wg {
			scale = math.Max(scale, math.Abs(x))
		}
		worst := 0.0
		for j := range g {
			for c := range g[j] {
				worst = math.Max(worst, math.Abs(g[j][c]-wg[j*tc.k+c]))
			}
		}
		if worst > 1e-8*scale {
			t.Errorf("%+v: graph gradient differs from kde.LogitGradient by %v (largest entry %v)", tc, worst, scale)
		}
		if worstAuto > 1e-8*scale {
			t.Errorf("%+v: written-out gradient differs from automatic differentiation by %v (largest entry %v)", tc, worstAuto, scale)
		}
		// Central differences of the graph value at a few entries.
		const eps = 1e-6
		for trial := 0; trial < 6; trial++ {
			j, c := rng.IntN(tc.b), rng.IntN(tc.k)
			old := logits[j][c]
			logits[j][c] = old + eps
			vp, _ := value(logits)
			logits[j][c] = old - eps
			vm, _ := value(logits)
			logits[j][c] = old
			fd := (vp - vm) / (2 * eps)
			if math.Abs(fd-g[j][c]) > 1e-6*math.Max(scale, 1e-3) {
				t.Errorf("%+v: d/dlogit[%d][%d]: graph %v, finite difference %v", tc, j, c, g[j][c], fd)
			}
		}
		t.Logf("%+v: value %.6g (kde %.6g), max |grad - kde| %.2g, |grad - autodiff| %.2g of %.2g", tc, v, wv, worst, worstAuto, scale)
	}
}

// TestLOOBandwidth: the graph's per-batch LOO choice equals
// kde.SelectBandwidth (canonical, unrefined, kde.DefaultGrid) on the same
// probabilities, for batches of several sharpnesses (logit scale 0.3 to 8,
// so that the choice moves across the grid). TestKDECanonicalGraph checks
// the gradient of the KDE term built on it.
func TestLOOBandwidth(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(10, 10))
	exec := G.MustNewExec(backend, func(lg *G.Node) *G.Node { return LOOBandwidth(lg, kde.DefaultGrid()) })
	seen := map[float64]bool{}
	for _, tc := range []struct {
		b, k  int
		scale float64
	}{{64, 3, 0.3}, {64, 4, 1}, {128, 10, 2}, {96, 26, 4}, {64, 7, 8}} {
		logits, labels, _ := batch(rng, tc.b, tc.k)
		flat := make([]float64, 0, tc.b*tc.k)
		for _, row := range logits {
			for c := range row {
				row[c] *= tc.scale / 2
			}
			flat = append(flat, row...)
		}
		out, err := exec.Exec(tensors.FromValue(logits))
		if err != nil {
			t.Fatal(err)
		}
		got := out[0].Value().(float64)
		probs := make([]float64, len(flat))
		for j := 0; j < tc.b; j++ {
			data.Softmax(probs[j*tc.k:(j+1)*tc.k], flat[j*tc.k:(j+1)*tc.k])
		}
		cv, err := kde.SelectBandwidth(context.Background(), kde.Canonical, probs, labels, tc.k, nil, kde.BandwidthOptions{NoRefine: true})
		if err != nil {
			t.Fatal(err)
		}
		if got != cv.Bandwidth {
			t.Errorf("%+v: graph LOO bandwidth %v, kde.SelectBandwidth %v (grid log-likelihoods %v)", tc, got, cv.Bandwidth, cv.GridLL)
		}
		seen[got] = true
		t.Logf("%+v: h = %.4g", tc, got)
	}
	if len(seen) < 3 {
		t.Errorf("the test batches select only %d distinct bandwidths; they should spread over the grid", len(seen))
	}
}

// TestBaselineLosses checks the graph baselines against direct
// computations (MMCE against metric.TopLabelMMCE, focal FL-53 and label
// smoothing written out; relative 1e-9) and their gradients against
// central finite differences (1e-6).
func TestBaselineLosses(t *testing.T) {
	backend, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	const b, k = 40, 4
	logits, labels, onehot := batch(rng, b, k)
	probs := make([]float64, 0, b*k)
	for _, row := range logits {
		p := make([]float64, k)
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for c, v := range row {
			p[c] = math.Exp(v - m)
			s += p[c]
		}
		for c := range p {
			p[c] /= s
		}
		probs = append(probs, p...)
	}
	mmce, _ := metric.TopLabelMMCE(probs, labels, k, 0.4, nil, nil)
	focal, smooth := 0.0, 0.0
	for j, y := range labels {
		py := probs[j*k+y]
		gamma := 3.0
		if py < 0.2 {
			gamma = 5
		}
		focal -= math.Pow(1-py, gamma) * math.Log(py) / b
		for c := 0; c < k; c++ {
			tgt := 0.1 / k
			if c == y {
				tgt += 0.9
			}
			smooth -= tgt * math.Log(probs[j*k+c]) / b
		}
	}
	for _, tc := range []struct {
		name string
		fn   func(lg, oh *G.Node) *G.Node
		want float64
	}{
		{"mmce", func(lg, oh *G.Node) *G.Node { return MMCE(lg, oh, 0.4) }, mmce},
		{"focal", Focal, focal},
		{"label smoothing", func(lg, oh *G.Node) *G.Node { return SmoothedXE(lg, oh, 0.1) }, smooth},
	} {
		exec := G.MustNewExec(backend, func(lg, oh *G.Node) (*G.Node, *G.Node) {
			v := tc.fn(lg, oh)
			return v, G.Gradient(v, lg)[0]
		})
		value := func() (float64, [][]float64) {
			out, err := exec.Exec(tensors.FromValue(logits), tensors.FromValue(onehot))
			if err != nil {
				t.Fatal(err)
			}
			return out[0].Value().(float64), out[1].Value().([][]float64)
		}
		v, g := value()
		if math.Abs(v-tc.want) > 1e-9*math.Abs(tc.want) {
			t.Errorf("%s: graph %v, direct %v", tc.name, v, tc.want)
		}
		const eps = 1e-6
		for trial := 0; trial < 5; trial++ {
			j, c := rng.IntN(b), rng.IntN(k)
			old := logits[j][c]
			logits[j][c] = old + eps
			vp, _ := value()
			logits[j][c] = old - eps
			vm, _ := value()
			logits[j][c] = old
			if fd := (vp - vm) / (2 * eps); math.Abs(fd-g[j][c]) > 1e-6 {
				t.Errorf("%s: d/dlogit[%d][%d]: graph %v, finite difference %v", tc.name, j, c, g[j][c], fd)
			}
		}
	}
}
