package evaluate

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/calib-dev/calib/internal/demo"
	"github.com/calib-dev/calib/metric"
)

// FuzzStreamState decodes the two passes' state (Sums and KernelSums JSON,
// as a Beam worker or a checkpoint would receive them) and finishes and
// merges it: corrupt or inconsistent state must be an error, never a
// panic. The seeds are the state of real streams (the default metrics,
// and equal-mass Doane bins with sharpness, mmce and ece_witness).
func FuzzStreamState(f *testing.F) {
	s, err := demo.Load("test")
	if err != nil {
		f.Fatal(err)
	}
	s = RowsOf(s, 0, 300)
	for _, o := range []StreamOptions{
		{EvalPoints: 20, KSCells: 8},
		{Options: Options{Metrics: StreamableMetrics(), Bandwidth: 0.05, WitnessBandwidth: 0.1, Bins: metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane}}, EvalPoints: 15, KSCells: 8},
	} {
		sums, err := NewSums(o)
		if err != nil {
			f.Fatal(err)
		}
		if err := sums.Add(&Batch{Set: s, Source: "x"}); err != nil {
			f.Fatal(err)
		}
		ks, err := sums.KernelSums()
		if err != nil {
			f.Fatal(err)
		}
		if err := ks.Add(context.Background(), &Batch{Set: s, Source: "x"}, 1); err != nil {
			f.Fatal(err)
		}
		a, _ := json.Marshal(sums)
		b, _ := json.Marshal(ks)
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
		Finish(sums, ks)
		other := new(Sums)
		if json.Unmarshal(a, other) == nil {
			sums.Merge(other)
		}
		if ks != nil {
			if k := new(KernelSums); json.Unmarshal(b, k) == nil {
				ks.Merge(k)
			}
		}
	})
}
