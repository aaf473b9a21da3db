package metric

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/calib-dev/calib/internal/mathx"
)

// TestFreqIntervals checks the bins' bootstrap intervals against a direct
// loop over the resamples (the oracle: Summarize of the indices drawn as
// Bootstrap draws them), their independence of the number of workers, the
// NaN of an empty bin, and the refusal of bad options.
func TestFreqIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	n := 500
	sc, oc := make([]float64, n), make([]float64, n)
	for i := range sc {
		sc[i] = 0.5 + 0.5*rng.Float64() // the bins below 0.5 stay empty
		if rng.Float64() < sc[i] {
			oc[i] = 1
		}
	}
	a, err := AssignBins(sc, nil, BinOptions{Bins: 10})
	if err != nil {
		t.Fatal(err)
	}
	o := BootstrapOptions{Resamples: 50, Level: 0.9, Seed: 7, Workers: 1}
	lo, hi, err := a.FreqIntervals(context.Background(), sc, oc, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	freqs := make([][]float64, 10)
	idx := make([]int, n)
	for b := 0; b < 50; b++ {
		r := rand.New(rand.NewPCG(7, uint64(b)))
		for i := range idx {
			idx[i] = r.IntN(n)
		}
		bs := a.Summarize(sc, oc, idx, nil)
		for j, c := range bs.Count {
			if c > 0 {
				freqs[j] = append(freqs[j], bs.Freq[j])
			}
		}
	}
	full := a.Summarize(sc, oc, nil, nil)
	for j, f := range freqs {
		if full.Count[j] == 0 {
			if !math.IsNaN(lo[j]) || !math.IsNaN(hi[j]) {
				t.Errorf("empty bin %d: [%v, %v]", j, lo[j], hi[j])
			}
			continue
		}
		slices.Sort(f)
		if wl, wh := mathx.Quantile(f, 0.05), mathx.Quantile(f, 1-0.05); lo[j] != wl || hi[j] != wh {
			t.Errorf("bin %d: [%v, %v], want [%v, %v]", j, lo[j], hi[j], wl, wh)
		}
		if !(lo[j] <= full.Freq[j] && full.Freq[j] <= hi[j]) {
			t.Errorf("bin %d: accuracy %v outside [%v, %v]", j, full.Freq[j], lo[j], hi[j])
		}
	}
	o.Workers = 3
	lo3, hi3, err := a.FreqIntervals(context.Background(), sc, oc, nil, o)
	if err != nil || !slices.Equal(lo[5:], lo3[5:]) || !slices.Equal(hi[5:], hi3[5:]) {
		t.Errorf("3 workers differ from 1 (err %v)", err)
	}
	if _, _, err := a.FreqIntervals(context.Background(), sc, oc, nil, BootstrapOptions{Level: 1.5}); err == nil {
		t.Error("level 1.5: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := a.FreqIntervals(ctx, sc, oc, nil, BootstrapOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v", err)
	}
}
