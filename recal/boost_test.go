package recal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/internal/rowkey"
	"github.com/calib-dev/calib/synth"
)

// lpGain returns, over the rows of f (n×k) and their truths h = E[y | f],
// the canonical CE_1 = mean ||h - f||_1 and the expected Lp (p = 1) gain
// of the recalibration g, mean sum_k sign(g_k - f_k) (h_k - f_k): the
// variational estimate's expectation given the map, CE_1 when every sign
// is right.
func lpGain(f, g, h []float64) (ce, gain float64) {
	n := 0.0
	for i := range f {
		ce += math.Abs(h[i] - f[i])
		d := g[i] - f[i]
		switch {
		case d > 0:
			gain += h[i] - f[i]
		case d < 0:
			gain -= h[i] - f[i]
		}
	}
	n = float64(len(f))
	return ce / n, gain / n
}

// TestBoostGroundTruth: on miscalibrations whose truth is known (synth),
// a boost map fitted on 10,000 rows recovers the Lp gain on 20,000 new
// rows: at least 0.9 of the true CE_1 where the direction of the
// miscalibration changes between regions of the simplex (synth.Split,
// over-confident where classes 0-4 win and under-confident elsewhere; a
// temperature gains under 0.15 of it), where one class alone is
// distorted (synth.OneClass) and where the temperature follows the
// entropy (synth.Entropic); and on a temperature, where temperature
// scaling is exact, at least 0.95 of it. On a calibrated model the map
// moves the probabilities by a mean L1 distance under 0.03.
func TestBoostGroundTruth(t *testing.T) {
	const k = 10
	ctx := context.Background()
	for _, c := range []struct {
		fa        synth.Family
		min, temp float64 // the least boost gain / CE_1; the most temperature gain / CE_1 (0: not checked)
	}{
		{synth.Family{K: k, Alpha: 1, Miscalibration: synth.Split, Param: 0.7}, 0.9, 0.15},
		{synth.Family{K: k, Alpha: 1, Miscalibration: synth.OneClass, Param: 2}, 0.9, 0},
		{synth.Family{K: k, Alpha: 1, Miscalibration: synth.Entropic, Param: 0.6}, 0.9, 0},
		{synth.Family{K: k, Alpha: 1, Miscalibration: synth.Tempering, Param: 0.7}, 0.95, 0},
	} {
		f, y, _ := c.fa.Draw(10000, rand.New(rand.NewPCG(1, 1)))
		ft, _, h := c.fa.Draw(20000, rand.New(rand.NewPCG(2, 1)))
		m, err := FitBoost(ctx, f, nil, y, k, nil, BoostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := m.Calibrate(ft, nil, k)
		if err != nil {
			t.Fatal(err)
		}
		ce, gain := lpGain(ft, g, h)
		t.Logf("%v: boost gains %.3f of CE_1 (%d trees)", c.fa, gain/ce, len(m.Trees))
		if gain < c.min*ce {
			t.Errorf("%v: boost gains %.4f of CE_1 %.4f (%.3f), want at least %.2f (%d trees)", c.fa, gain, ce, gain/ce, c.min, len(m.Trees))
		}
		if c.temp > 0 {
			tm, err := FitTemperature(logProbs(f, nil, k), y, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			gt, _ := tm.Calibrate(ft, nil, k)
			if _, tg := lpGain(ft, gt, h); tg > c.temp*ce {
				t.Errorf("%v: temperature scaling gains %.4f of %.4f: the setting is not outside its reach", c.fa, tg, ce)
			}
		}
	}
	fa := synth.Family{K: k, Alpha: 1, Miscalibration: synth.Calibrated}
	f, y, _ := fa.Draw(10000, rand.New(rand.NewPCG(3, 1)))
	m, err := FitBoost(ctx, f, nil, y, k, nil, BoostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := m.Calibrate(f, nil, k)
	if d, _ := lpGain(f, g, f); d > 0.03 {
		t.Errorf("calibrated: the map moves the probabilities by %.4f (L1), want under 0.03", d)
	}
}

// TestBoostMap: the map's rows are finite and sum to 1 within 1e-12 for
// K = 2, 3 and 40 (a tail beyond the top 10), from logits (extreme ones
// included) and from probabilities with zeros; it saves and loads back
// to the same bytes and the same probabilities; two fits of the same
// data are the same map.
func TestBoostMap(t *testing.T) {
	ctx := context.Background()
	for _, k := range []int{2, 3, 40} {
		p, z, y := logitSet(600, k, uint64(k))
		m, err := FitBoost(ctx, p, z, y, k, nil, BoostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m2, _ := FitBoost(ctx, p, z, y, k, nil, BoostOptions{})
		var a, b bytes.Buffer
		if err := Save(&a, m); err != nil {
			t.Fatal(err)
		}
		Save(&b, m2)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("K = %d: two fits of the same data differ", k)
		}
		back, err := Load(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("K = %d: %v", k, err)
		}
		var c bytes.Buffer
		Save(&c, back)
		if !bytes.Equal(a.Bytes(), c.Bytes()) {
			t.Errorf("K = %d: the loaded map saves differently", k)
		}
		zx := append([]float64(nil), z[:3*k]...)
		zx[0], zx[k+1], zx[2*k] = 800, -900, 1e-300
		px := append([]float64(nil), p[:2*k]...)
		px[0], px[1] = px[0]+px[1], 0
		for _, in := range []struct{ p, z []float64 }{{nil, zx}, {px, nil}, {p, z}} {
			out, err := m.Calibrate(in.p, in.z, k)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := back.Calibrate(in.p, in.z, k)
			if !slices.Equal(out, again) {
				t.Fatalf("K = %d: %v, loaded: %v", k, out, again)
			}
			if i, s := notDistribution(out, k, 1e-12); i >= 0 {
				t.Errorf("K = %d, row %d sums to %v: %v", k, i, s, out[i*k:(i+1)*k])
			}
		}
	}
}

// TestBoostLoadRejects: maps whose trees cannot be a fit's are refused
// naming the field, as ErrMap (values) or ErrSchema (form).
func TestBoostLoadRejects(t *testing.T) {
	head := `{"schema_version":1,"method":"boost","input":"logits","k":3,"top":3,"trees":[`
	leaf := `{"feature":[-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0.1],"slope":[0.2]}`
	for _, c := range []struct {
		tree, want string
		kind       error
	}{
		{`{"feature":[0,-1,-1],"threshold":[-1,0,0],"categories":[null,null,null],"left":[0,-1,-1],"right":[2,-1,-1],"value":[0,1,2],"slope":[0,0,0]}`, "node 0's child 0", ErrMap},
		{`{"feature":[0,-1,-1],"threshold":[-1,0,0],"categories":[null,null,null],"left":[1,-1,-1],"right":[1,-1,-1],"value":[0,1,2],"slope":[0,0,0]}`, "node 0's child 1", ErrMap},
		{`{"feature":[9],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0],"slope":[0]}`, "feature[0] = 9", ErrMap},
		{`{"feature":[-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[1e9],"slope":[0]}`, "value 1e+09", ErrMap},
		{`{"feature":[0,-1,-1],"threshold":[-1,0,0],"categories":[[1],null,null],"left":[1,-1,-1],"right":[2,-1,-1],"value":[0,1,2],"slope":[0,0,0]}`, "categorical feature", ErrMap},
		{`{"feature":[5,-1,-1],"threshold":[0,0,0],"categories":[[7],null,null],"left":[1,-1,-1],"right":[2,-1,-1],"value":[0,1,2],"slope":[0,0,0]}`, "categories[0]: 7", ErrMap},
		{`{"feature":[-1,-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0],"slope":[0]}`, "2 features but arrays of 1", ErrSchema},
		{`{"feature":[-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0],"slope":[0],"floor":0.5}`, "floor 0.5", ErrMap},
		{`{"feature":[-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0],"slope":[0],"floor":-100}`, "floor -100", ErrMap},
	} {
		_, err := Load(strings.NewReader(head + leaf + "," + c.tree + "]}"))
		if err == nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tree %s: %v, want %v naming %q", c.tree, err, c.kind, c.want)
		}
	}
	if _, err := Load(strings.NewReader(head + leaf + "]}")); err != nil {
		t.Errorf("a one-leaf tree: %v", err)
	}
}

// TestBoostFloor: a tree's slope reads max(u, floor) (a hand map:
// probabilities 0.999 and 0.001, a leaf of slope 1 and floor -2), and a
// fit's floor is the log-probability below which the training pairs hold
// boostFloorShare of the Hessian mass p (1 - p) (brute force: every pair
// sorted), its temperature tree without one.
func TestBoostFloor(t *testing.T) {
	m, err := Load(strings.NewReader(`{"schema_version":1,"method":"boost","input":"logits","k":2,"top":2,"trees":[` +
		`{"feature":[-1],"threshold":[0],"categories":[null],"left":[-1],"right":[-1],"value":[0],"slope":[1],"floor":-2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Calibrate([]float64{0.999, 0.001}, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, b := 0.999*math.Exp(math.Log(0.999)), 0.001*math.Exp(-2)
	if want := b / (a + b); math.Abs(out[1]-want) > 1e-15 {
		t.Errorf("floor -2: %v, want %v", out[1], want)
	}
	for _, k := range []int{3, 40} {
		fa := synth.Family{K: k, Alpha: 1 / math.Sqrt(float64(k)), Miscalibration: synth.Split, Param: 0.6}
		p, y, _ := fa.Draw(4000, rand.New(rand.NewPCG(uint64(k), 9)))
		var z []float64
		fit, err := FitBoost(context.Background(), p, z, y, k, nil, BoostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pr := boostPairs(logProbs(p, z, k), k, min(10, k))
		per := pr.start[1] - pr.start[0]
		type uh struct{ u, h float64 }
		var all []uh
		total := 0.0
		for i := range len(y) {
			if rowkey.Fold(uint64(i), boostSalt, boostHeldFolds) == 0 {
				continue // held out
			}
			for j := pr.start[i]; j < pr.start[i]+per; j++ {
				q := math.Exp(pr.u[j])
				all = append(all, uh{pr.u[j], q * (1 - q)})
				total += q * (1 - q)
			}
		}
		slices.SortFunc(all, func(a, b uh) int { return cmpFloat(a.u, b.u) })
		want, cum := 0.0, 0.0
		for _, x := range all {
			if cum += x.h; cum >= boostFloorShare*total {
				want = x.u
				break
			}
		}
		if len(fit.Trees) < 2 || fit.Trees[0].Floor != 0 {
			t.Fatalf("K = %d: %d trees, the first's floor %v: want a temperature without one and deeper trees", k, len(fit.Trees), fit.Trees[0].Floor)
		}
		for ti, tr := range fit.Trees[1:] {
			if tr.Floor != want {
				t.Errorf("K = %d, tree %d: floor %v, want %v", k, ti+1, tr.Floor, want)
			}
		}
	}
}

// TestBoostExtremeLogits: a class masked by a logit of -3.4e38 (a
// log-probability far below any bucket of the floor's search) fits and
// maps to finite probabilities that sum to 1, the masked class's 0.
func TestBoostExtremeLogits(t *testing.T) {
	const k = 4
	_, z, y := logitSet(500, k, 11)
	for i := range len(y) {
		z[i*k+3] = -3.4e38
		if y[i] == 3 {
			y[i] = 0
		}
	}
	m, err := FitBoost(context.Background(), nil, z, y, k, nil, BoostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Calibrate(nil, z, k)
	if err != nil {
		t.Fatal(err)
	}
	if i, s := notDistribution(out, k, 1e-12); i >= 0 {
		t.Fatalf("row %d sums to %v: %v", i, s, out[i*k:(i+1)*k])
	}
	for i := 0; i < len(out); i += k {
		if out[i+3] != 0 {
			t.Fatalf("row %d: %v, the masked class above 0", i/k, out[i:i+k])
		}
	}
}

// BenchmarkFitBoost: one fit on 8,000 rows (a fold's training rows of a
// 10,000-row cross-fit) of the split miscalibration, K = 10 and 100.
func BenchmarkFitBoost(b *testing.B) {
	for _, k := range []int{10, 100} {
		alpha := 1.0
		if k > 10 {
			alpha = 1 / float64(k)
		}
		fa := synth.Family{K: k, Alpha: alpha, Miscalibration: synth.Split, Param: 0.7}
		f, y, _ := fa.Draw(8000, rand.New(rand.NewPCG(1, 2)))
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			for b.Loop() {
				m, err := FitBoost(context.Background(), f, nil, y, k, nil, BoostOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(m.Trees)), "trees")
			}
		})
	}
}
