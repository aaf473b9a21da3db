package variational

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/calib-dev/calib/notion"
)

// TestProbmetricsLosses: calib's per-row gains l(f, y) - l(g, y) equal
// probmetrics' own (its code at 34123ba, run unmodified by
// scripts/variational_reference.py on Debian torch 1.13, float64) on 60
// rows at K = 2 and 5 with fixed f, g and labels, within 1e-12: the
// canonical ProperLpLoss at p = 1, 2, 3, LogLoss and BrierLoss;
// TopClassLoss of ProperLpLoss(1), LogLoss and the one-column BrierLoss;
// at K = 2 the one-column ProperLpLoss(1) and BrierLoss (calib's binary
// notion) and their OverConfidenceLoss and UnderConfidenceLoss
// (calib's Over and Under). probmetrics' one-column BrierLoss
// (binary_as_multiclass=False) returns one number, the sum over the rows,
// from its per-row method (metrics.py line 491 sums over dim -1 after
// taking column 1): a defect of the reference, so those entries are
// compared with the sum of calib's per-row gains. Its one-column
// ProperLpLoss (binary, and inside TopClassLoss) slices the predictions
// and labels to column 1 but not f_x (metrics.py, ProperLpLoss), so g_1
// is compared with both columns (1 - f_1, f_1) by broadcasting: on the
// rows where that changes the value, the reference's number is checked
// against that broadcast formula (oneColumnLpAsProbmetrics) and calib
// keeps the definition, sign(g - f)(y - f).
func TestProbmetricsLosses(t *testing.T) {
	b, err := os.ReadFile("testdata/probmetrics.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Sets []struct {
			K      int
			F, G   []float64
			Labels []int
			Gains  map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	checked, broadcast := 0, 0
	for _, s := range ref.Sets {
		k := s.K
		for name, raw := range s.Gains {
			var want []float64
			summed := json.Unmarshal(raw, &want) != nil
			if summed {
				var total float64
				if err := json.Unmarshal(raw, &total); err != nil {
					t.Fatal(err)
				}
				want = []float64{total}
			}
			rows := len(want)
			if summed {
				rows = len(s.Labels)
			}
			var sum float64
			for i := range rows {
				w := want[min(i, len(want)-1)]
				f, g, y := s.F[i*k:(i+1)*k], s.G[i*k:(i+1)*k], s.Labels[i]
				var got float64
				switch name {
				case "lp1", "lp2", "lp3":
					got = gain(Options{Loss: Lp, P: float64(name[2] - '0')}, f, g, y)
				case "log":
					got = gain(Options{Loss: Log}, f, g, y)
				case "brier":
					got = gain(Options{Loss: Brier}, f, g, y)
				case "top_lp1", "top_log", "top_brier", "binary_lp1", "binary_brier", "over_lp1", "over_brier", "under_lp1", "under_brier":
					o := Options{Loss: Loss(map[string]string{"lp1": "lp", "log": "log", "brier": "brier"}[lossSuffix(name)]), P: 1}
					fs, gs, ys := oneColumn(name, f, g, y)
					got = gain1(o, fs, gs, ys)
				default:
					t.Fatalf("unknown reference %q", name)
				}
				sum += got
				if (name == "top_lp1" || name == "binary_lp1" || name == "over_lp1" || name == "under_lp1") && math.Abs(got-w) > 1e-12 {
					// The reference's broadcast (see above).
					fs, gs, ys := oneColumn(name, f, g, y)
					if pm := oneColumnLpAsProbmetrics(fs, gs, ys); math.Abs(pm-w) > 1e-12 {
						t.Errorf("K = %d, %s, row %d: probmetrics %v, its broadcast formula %v", k, name, i, w, pm)
					}
					broadcast++
					continue
				}
				if !summed && math.Abs(got-w) > 1e-12 {
					t.Errorf("K = %d, %s, row %d: %v, probmetrics %v", k, name, i, got, w)
				}
				checked++
			}
			if summed && math.Abs(sum-want[0]) > 1e-11 {
				t.Errorf("K = %d, %s: sum %v, probmetrics %v", k, name, sum, want[0])
			}
		}
	}
	if checked < 1000 || broadcast == 0 || broadcast > checked/10 {
		t.Errorf("%d gains checked, %d where the reference broadcasts", checked, broadcast)
	}
	t.Logf("%d gains checked, %d of them where probmetrics' one-column Lp loss broadcasts f_x", checked, broadcast)
}

// oneColumnLpAsProbmetrics is probmetrics' one-column ProperLpLoss(p = 1)
// gain as its code computes it: d = (g - (1 - f), g - f) by broadcasting,
// l(x) = -sum_j sign(d_j(x)) (y - x) - ||d(x)||_1 for x = f and x = g,
// gain l(f) - l(g).
func oneColumnLpAsProbmetrics(f, g, y float64) float64 {
	l := func(x float64) float64 {
		d := [2]float64{x - (1 - f), x - f}
		norm := math.Abs(d[0]) + math.Abs(d[1])
		if norm == 0 {
			return 0
		}
		dot := 0.0
		for _, v := range d {
			dot += -sign(v) * (y - x)
		}
		return dot - norm
	}
	return l(f) - l(g)
}

// oneColumn returns the one coordinate of a row that the reference's
// one-column entry name reads ("top_..." the top label's, else p1) and g
// clipped as its over_ or under_ wrapper clips it.
func oneColumn(name string, f, g []float64, y int) (fs, gs, ys float64) {
	nt := notion.Binary
	if strings.HasPrefix(name, "top_") {
		nt = notion.TopLabel
	}
	fs, gs, ys = scalar(nt, f, g, y)
	lo, hi := confidenceClips(nt, fs, gs)
	switch {
	case strings.HasPrefix(name, "over_"):
		gs = lo
	case strings.HasPrefix(name, "under_"):
		gs = hi
	}
	return fs, gs, ys
}

// lossSuffix returns the loss part of a reference name ("lp1", "log",
// "brier").
func lossSuffix(name string) string {
	for _, s := range []string{"lp1", "log", "brier"} {
		if len(name) >= len(s) && name[len(name)-len(s):] == s {
			return s
		}
	}
	return ""
}
