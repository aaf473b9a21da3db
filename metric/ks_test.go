package metric

import (
	"cmp"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/calib-dev/calib/data"
)

// testLogits maps the logit sets of the splines golden file to their test
// split in the repository.
var testLogits = map[string]string{
	"cifar10_resnet110-brier":    "../cmd/calib/internal/demo/cifar10_resnet110-brier",
	"cifar10_densenet121-flsd53": "../testdata/logits/cifar10_densenet121-flsd53",
	"cifar100_resnet110-brier":   "../testdata/logits/cifar100_resnet110-brier",
}

type splinesGolden struct {
	Models map[string]struct {
		NClasses     int `json:"n_classes"`
		Uncalibrated struct {
			Test struct {
				KSTop1       float64 `json:"ks_top1"`
				KSTop2       float64 `json:"ks_top2"`
				KSWithinTop2 float64 `json:"ks_within_top2"`
				ECE25Top1    float64 `json:"ece25_top1"`
			} `json:"test"`
		} `json:"uncalibrated"`
		ClasswiseKSMeanTest struct {
			Uncalibrated float64 `json:"uncalibrated"`
		} `json:"classwise_ks_mean_test"`
		Variants struct {
			KSTop1Float64 float64 `json:"ks_top1_uncal_test_float64_softmax_stable_sort"`
		} `json:"variants"`
	} `json:"models"`
}

// loadSplinesGolden reads testdata/golden/splines/reference_results.json.
func loadSplinesGolden(t testing.TB) *splinesGolden {
	t.Helper()
	b, err := os.ReadFile("../testdata/golden/splines/reference_results.json")
	if err != nil {
		t.Fatal(err)
	}
	var g splinesGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Models) == 0 {
		t.Fatal("no models in the golden file")
	}
	return &g
}

func loadTestSet(t testing.TB, dir string) *data.Set {
	t.Helper()
	s, err := data.Load(filepath.Join(dir, "test_logits.npy"), data.Options{Logits: true, Labels: filepath.Join(dir, "test_labels.npy")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKSGolden compares the KS errors with the splines reference
// (testdata/golden/splines, copied from shared/golden/splines): top-1 with
// float64 softmax and stable sort and the class-wise mean to 1e-6; top-2 and
// within-top-2, which the reference computes in float32, to 3e-5.
func TestKSGolden(t *testing.T) {
	for name, m := range loadSplinesGolden(t).Models {
		dir, ok := testLogits[name]
		if !ok {
			t.Errorf("%s: no logits in the repository", name)
			continue
		}
		s := loadTestSet(t, dir)
		if s.K != m.NClasses {
			t.Fatalf("%s: K = %d, golden %d", name, s.K, m.NClasses)
		}
		check := func(what string, got, want, tol float64) {
			t.Helper()
			if d := math.Abs(got - want); !(d <= tol) {
				t.Errorf("%s %s: %.9g, reference %.9g (|diff| %.2g > %g)", name, what, got, want, d, tol)
			} else {
				t.Logf("%s %s: |diff| %.2g", name, what, d)
			}
		}
		sc, oc := TopR(s.Probs, s.Labels, s.K, 1)
		v, _ := KS(sc, oc, false, nil)
		check("top-1", v, m.Variants.KSTop1Float64, 1e-6)
		sc, oc = TopR(s.Probs, s.Labels, s.K, 2)
		v, _ = KS(sc, oc, false, nil)
		check("top-2", v, m.Uncalibrated.Test.KSTop2, 3e-5)
		sc, oc = WithinTopR(s.Probs, s.Labels, s.K, 2)
		v, _ = KS(sc, oc, false, nil)
		check("within-top-2", v, m.Uncalibrated.Test.KSWithinTop2, 3e-5)
		check("class-wise mean", ClassWiseKS(s.Probs, s.Labels, s.K, nil).Value, m.ClasswiseKSMeanTest.Uncalibrated, 1e-6)
	}
}

// TestKSHand checks KS and its curve on a small case computed by hand.
func TestKSHand(t *testing.T) {
	// Sorted by score: (0.2, 0), (0.5, 1), (0.5, 0) [stable], (0.9, 1).
	scores := []float64{0.9, 0.5, 0.2, 0.5}
	outcomes := []float64{1, 1, 0, 0}
	v, cv := KS(scores, outcomes, true, nil)
	// Pred: 0.05, 0.175, 0.3, 0.525; Obs: 0, 0.25, 0.25, 0.5 -> diffs 0.05, 0.075, 0.05, 0.025.
	if math.Abs(v-0.075) > 1e-15 {
		t.Errorf("KS = %v, want 0.075", v)
	}
	want := []float64{0.05, 0.175, 0.3, 0.525}
	for i := range want {
		if math.Abs(cv.Pred[i]-want[i]) > 1e-15 {
			t.Errorf("Pred[%d] = %v, want %v", i, cv.Pred[i], want[i])
		}
	}
	if cv.Obs[1] != 0.25 || cv.Score[0] != 0.2 {
		t.Errorf("curve %+v", cv)
	}
	// Top-r and within-top-r on one row: probs (0.1, 0.6, 0.3), label 2.
	p := []float64{0.1, 0.6, 0.3}
	s, o := TopR(p, []int{2}, 3, 2)
	if s[0] != 0.3 || o[0] != 1 {
		t.Errorf("top-2: %v %v", s, o)
	}
	s, o = WithinTopR(p, []int{2}, 3, 2)
	if math.Abs(s[0]-0.9) > 1e-15 || o[0] != 1 {
		t.Errorf("within-top-2: %v %v", s, o)
	}
	s, o = TopR(p, []int{2}, 3, 1)
	if s[0] != 0.6 || o[0] != 0 {
		t.Errorf("top-1: %v %v", s, o)
	}
}

// TestRankingMatchesStableSort: the top-r selection gives the first r
// indices of a stable sort by decreasing probability (ties to the lower
// class index), on rows full of ties.
func TestRankingMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 2000; trial++ {
		k := 1 + rng.IntN(40)
		row := make([]float64, k)
		for c := range row {
			row[c] = float64(rng.IntN(5)) / 4 // many ties
		}
		want := make([]int, k)
		for c := range want {
			want[c] = c
		}
		slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(row[b], row[a]) })
		for r := 1; r <= k; r++ {
			if got := ranking(row, r, nil); !slices.Equal(got, want[:r]) {
				t.Fatalf("row %v, r = %d: ranking %v, want %v", row, r, got, want[:r])
			}
		}
	}
}

// KSOutcomes is KS with the outcomes replaced, bit for bit, with and
// without weights, on scores with ties.
func TestKSOutcomes(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	n := 500
	s, o, o2, w := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range s {
		s[i] = math.Round(rng.Float64()*40) / 40 // ties
		o[i], o2[i] = float64(rng.IntN(2)), float64(rng.IntN(2))
		w[i] = rng.Float64()
	}
	for _, wt := range [][]float64{nil, w} {
		sk := NewSortedKS(s, o, wt)
		for _, out := range [][]float64{o, o2} {
			want, _ := KS(s, out, false, wt)
			if got := sk.KSOutcomes(out); got != want {
				t.Errorf("weighted=%v: KSOutcomes %v, KS %v", wt != nil, got, want)
			}
		}
	}
}
