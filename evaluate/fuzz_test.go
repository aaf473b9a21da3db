package evaluate

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/metric"
)

// FuzzStreamState decodes the two passes' state (Sums and KernelSums JSON,
// as a Beam worker or a checkpoint would receive them) and finishes and
// merges it: corrupt or inconsistent state must be an error, never a
// panic, and state that decodes must be consistent: Finish reports the
// decoded n, an accuracy and a confidence in [0, 1] and no NaN or
// infinite value, and a Sums merged with a copy of itself is refused (the
// same rows twice). The seeds are the state of real streams (the default
// metrics, and equal-mass Doane bins with sharpness, mmce and
// ece_witness), and the states of testdata/state-v2, written before the
// states had kinds.
func FuzzStreamState(f *testing.F) {
	s, err := demoSet("test")
	if err != nil {
		f.Fatal(err)
	}
	s = s.Rows(0, 300)
	for _, o := range []StreamOptions{
		{EvalPoints: 20, KSCells: 8},
		{Options: Options{Metrics: StreamableMetrics(), Bandwidth: 0.05, Witness: WitnessOptions{Bandwidth: 0.1}, Bins: metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane}}, EvalPoints: 15, KSCells: 8},
	} {
		sums, err := NewSums(o)
		if err != nil {
			f.Fatal(err)
		}
		if err := sums.Add(&data.Batch{Set: s, Source: "x"}); err != nil {
			f.Fatal(err)
		}
		ks, err := sums.KernelSums()
		if err != nil {
			f.Fatal(err)
		}
		if err := ks.Add(context.Background(), &data.Batch{Set: s, Source: "x"}, 1); err != nil {
			f.Fatal(err)
		}
		a, _ := json.Marshal(sums)
		b, _ := json.Marshal(ks)
		f.Add(a, b)
	}
	for _, name := range []string{"fixed", "sketched"} { // states written before kinds were recorded
		a, errA := os.ReadFile("testdata/state-v2/" + name + "-sums.json")
		b, errB := os.ReadFile("testdata/state-v2/" + name + "-kernelsums.json")
		if errA != nil || errB != nil {
			f.Fatal(errA, errB)
		}
		f.Add(a, b)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		sums := new(Sums)
		if err := json.Unmarshal(a, sums); err != nil {
			return
		}
		var ks *KernelSums
		if k := new(KernelSums); json.Unmarshal(b, k) == nil {
			ks = k
		}
		if ev, err := Finish(sums, ks); err == nil {
			if int64(ev.N) != sums.st.N {
				t.Errorf("Finish reports n = %d of sums with n = %d", ev.N, sums.st.N)
			}
			for _, r := range ev.Results {
				if r.Value == nil {
					continue
				}
				v := float64(*r.Value)
				if math.IsNaN(v) || math.IsInf(v, 0) || (r.Metric == "accuracy" || r.Metric == "confidence") && !(v >= 0 && v <= 1+1e-9) {
					t.Errorf("Finish of decoded sums: %s %s = %v", r.Metric, r.Notion, v)
				}
			}
		}
		other := new(Sums)
		if json.Unmarshal(a, other) == nil {
			n := sums.st.N
			if err := sums.Merge(other); err == nil && other.st.N > 0 {
				t.Errorf("sums of n = %d merged with a copy of themselves: accepted (n = %d)", n, sums.st.N)
			}
		}
		if ks != nil {
			if k := new(KernelSums); json.Unmarshal(b, k) == nil {
				ks.Merge(k)
			}
		}
	})
}
