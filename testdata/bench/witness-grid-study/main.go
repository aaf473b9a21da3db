// Study: the witness with the 25-point and the 13-point grid against the
// ground truth of synthetic setups (not part of the build: a directory
// starting with _ is ignored by ./...).
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/synth"
)

func main() {
	reps, _ := strconv.Atoi(os.Args[1])
	g25 := mathx.LogSpace(0.003, 1, 25)
	g13 := mathx.LogSpace(0.003, 1, 13)
	setups := []synth.Setup{{K: 4, T1: 0.6, T2: 0.6}, {K: 8, T1: 0.6, T2: 0.6}, {K: 4, T1: 1, T2: 2}, {K: 4, T1: 0.6, T2: 1}, {K: 20, T1: 0.6, T2: 0.6}}
	for _, s := range setups {
		t1 := s.GroundTruth(1, 2_000_000, 1, 0)
		t2 := s.GroundTruth(2, 2_000_000, 1, 0)
		for _, n := range []int{500, 2000, 5000} {
			r := reps
			if n == 5000 {
				r = max(2, reps/3)
			}
			var sum [2][2]float64
			var sq [2][2]float64
			var diff [2][]float64
			for rep := 0; rep < r; rep++ {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(rep)))
				f, y, _ := s.Draw(n, rng)
				var v [2][2]float64
				for gi, g := range [][]float64{g25, g13} {
					w, err := kde.Witness(f, y, s.K, nil, kde.WitnessOptions{Grid: g, Seed: uint64(rep)})
					if err != nil {
						panic(err)
					}
					v[gi][0] = w.Values[0].Value
					v[gi][1] = w.Values[1].Value
				}
				for gi := range 2 {
					for p := range 2 {
						tr := []float64{t1.Value, t2.Value}[p]
						sum[gi][p] += v[gi][p]
						sq[gi][p] += (v[gi][p] - tr) * (v[gi][p] - tr)
					}
				}
				diff[0] = append(diff[0], v[1][0]-v[0][0])
				diff[1] = append(diff[1], v[1][1]-v[0][1])
			}
			fr := float64(r)
			fmt.Printf("K=%-3d t1=%g t2=%g n=%-5d reps=%-3d | p=1 truth %.4f mean 25: %.4f 13: %.4f rmse 25: %.4f 13: %.4f | p=2 truth %.5f mean 25: %.5f 13: %.5f rmse 25: %.5f 13: %.5f | mean |diff| p1 %.4f p2 %.5f \n",
				s.K, s.T1, s.T2, n, r,
				t1.Value, sum[0][0]/fr, sum[1][0]/fr, math.Sqrt(sq[0][0]/fr), math.Sqrt(sq[1][0]/fr),
				t2.Value, sum[0][1]/fr, sum[1][1]/fr, math.Sqrt(sq[0][1]/fr), math.Sqrt(sq[1][1]/fr),
				meanAbs(diff[0]), meanAbs(diff[1]))
		}
	}
}

func meanAbs(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Abs(v)
	}
	return s / float64(len(x))
}
