// Package testenv tells the tests how thorough to be.
//
// A plain `go test ./...` runs every check at a size that keeps the whole
// suite within a couple of minutes on a small machine. Some checks are
// statistical (Monte Carlo ground truths, convergence in n, training runs)
// and are stronger at larger sizes; those sizes run only when the
// environment variable CALIB_THOROUGH is 1. The CI script (.ci/run) runs
// `CALIB_THOROUGH=1 go test ./...`, so the thorough suite still guards
// every change; set the variable locally before touching an estimator:
//
//	CALIB_THOROUGH=1 go test ./kde/
//
// Tests that honour it do so in one of two ways: they run a smaller size by
// default that still checks the same property (with a tolerance for that
// size), and the full size under Thorough; or, where a smaller size would
// prove nothing new, they skip by default and say so in the skip message.
// `go test -short` skips the slow parts as before, whatever the variable.
package testenv

import "os"

// Thorough reports whether the environment variable CALIB_THOROUGH is set
// to 1: whether the tests should run their slow, full-size checks.
func Thorough() bool {
	return os.Getenv("CALIB_THOROUGH") == "1"
}

// MeanOne moves units of weight between rows drawn by intn until the
// integer weights w (each in 0..3) sum to len(w): weights of mean 1 are
// their own normalised form, so the estimators that read weights as
// counts (package metric's EqualMass) see the rows repeated w_i times.
func MeanOne(w []float64, intn func(int) int) {
	sum := 0.0
	for _, v := range w {
		sum += v
	}
	for sum != float64(len(w)) {
		i := intn(len(w))
		switch {
		case sum > float64(len(w)) && w[i] > 0:
			w[i]--
			sum--
		case sum < float64(len(w)) && w[i] < 3:
			w[i]++
			sum++
		}
	}
}
