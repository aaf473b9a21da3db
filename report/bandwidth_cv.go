package report

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/calib-dev/calib/kde"
)

// CurveGrid is the candidate bandwidths of CurveBandwidth: 14 values
// log-spaced from 0.002 to 0.1 (wider kernels flatten the curve where few
// samples lie, which the cross-validated error, dominated by the many
// samples near 0 or 1, does not penalise).
func CurveGrid() []float64 {
	g := make([]float64, 14)
	for i := range g {
		g[i] = 0.002 * math.Pow(0.1/0.002, float64(i)/13)
	}
	return g
}

// CurveBandwidth chooses the bandwidth of a Beta-kernel regression curve of
// 0/1 outcomes on scores: RegressionBandwidth on the points (1 - s, s).
func CurveBandwidth(scores []float64, outcomes []int, seed uint64, workers int) (float64, error) {
	two := make([]float64, 2*len(scores))
	for i, s := range scores {
		two[2*i], two[2*i+1] = 1-s, s
	}
	return RegressionBandwidth(two, outcomes, 2, seed, workers)
}

// RegressionBandwidth chooses the bandwidth of the Dirichlet kernel
// regression E[y | f] (kde.Regression) of labels on predictions (n×k): the
// CurveGrid value with the smallest 5-fold cross-validated squared error
// sum_j ||r_{-fold(j)}(f_j) - e_{y_j}||^2, on a seeded subsample of at most
// 1,000 samples (drawn, and cut into folds, from PCG(seed, 2)). This targets
// the regression itself; the LOO likelihood bandwidth of ECE^KDE targets the
// density of the predictions and is much smaller where they pile up near a
// vertex, which makes a drawn curve or surface wiggle.
func RegressionBandwidth(probs []float64, labels []int, k int, seed uint64, workers int) (float64, error) {
	n := len(labels)
	if n < 10 {
		return 0, fmt.Errorf("report: regression bandwidth: %d samples, need at least 10", n)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	idx := rng.Perm(n)
	if len(idx) > 1000 {
		idx = idx[:1000]
	}
	const folds = 5
	grid := CurveGrid()
	loss := make([]float64, len(grid))
	for f := 0; f < folds; f++ {
		var tx, qx []float64
		var ty, qy []int
		for j, i := range idx {
			if j%folds == f {
				qx, qy = append(qx, probs[i*k:(i+1)*k]...), append(qy, labels[i])
			} else {
				tx, ty = append(tx, probs[i*k:(i+1)*k]...), append(ty, labels[i])
			}
		}
		for g, h := range grid {
			r, _, _, err := kde.Regression(qx, tx, ty, k, kde.Options{Bandwidth: h, Workers: workers})
			if err != nil {
				return 0, fmt.Errorf("report: regression bandwidth: %w", err)
			}
			for j, y := range qy {
				for c := 0; c < k; c++ {
					v := r[j*k+c]
					if math.IsNaN(v) {
						v = 1 / float64(k) // no kernel mass: the uninformed guess
					}
					if c == y {
						v--
					}
					loss[g] += v * v
				}
			}
		}
	}
	best := 0
	for g := range loss {
		if loss[g] < loss[best] {
			best = g
		}
	}
	return grid[best], nil
}
