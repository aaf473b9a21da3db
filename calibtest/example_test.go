package calibtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/calib-dev/calib/calibtest"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/synth"
)

// Test whether confidences are calibrated: the cumulative-difference
// (Kolmogorov-Smirnov, Kuiper) and Spiegelhalter tests with their p-values.
func Example() {
	scores := []float64{0.9, 0.8, 0.95, 0.7, 0.85, 0.6, 0.99, 0.75}
	correct := []float64{1, 1, 1, 0, 1, 1, 1, 0}
	c, err := calibtest.Cumulative(scores, correct, nil)
	if err != nil {
		panic(err)
	}
	s, _ := calibtest.Spiegelhalter(scores, correct, nil)
	fmt.Printf("KS %.3f (p = %.3f), Kuiper %.3f (p = %.3f), Spiegelhalter z %.3f (p = %.3f)\n", c.KS, c.KSP, c.Kuiper, c.KuiperP, s.Z, s.P)
	fmt.Println("class-wise, Holm-adjusted:", calibtest.Holm([]float64{0.01, 0.2, 0.04}))
	// Output:
	// KS 1.014 (p = 0.617), Kuiper 1.400 (p = 0.605), Spiegelhalter z 0.383 (p = 0.702)
	// class-wise, Holm-adjusted: [0.03 0.2 0.08]
}

// Consistency resampling of canonical ECE^KDE: the kernel is swept once
// per batch of resampled label vectors (kde.Relabel), at a bandwidth
// chosen without the labels.
func ExampleConsistency() {
	rng := rand.New(rand.NewPCG(1, 2))
	f, y, _ := synth.Paper(3).Draw(500, rng) // the paper's miscalibrated model
	cv, err := kde.SelectBandwidth(context.Background(), kde.Canonical, f, make([]int, 500), 3, nil, kde.BandwidthOptions{})
	if err != nil {
		panic(err)
	}
	stat, err := calibtest.ECEKDEStatistic(context.Background(), kde.Canonical, f, 3, nil, kde.Options{Bandwidth: cv.Bandwidth})
	if err != nil {
		panic(err)
	}
	r, err := calibtest.Consistency(context.Background(), f, y, 3, stat, calibtest.ConsistencyOptions{Resamples: 199, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d of %d resamples at least as large: p = %.3f\n", r.Exceed, r.Resamples, r.P)
	// Output:
	// 0 of 199 resamples at least as large: p = 0.005
}

// Run answers in one line, with a row per test and notion.
func ExampleRun() {
	rng := rand.New(rand.NewPCG(3, 4))
	f, _, _ := synth.Paper(4).Draw(2000, rng)
	y := synth.Labels(nil, f, 4, rng) // labels drawn from the predictions: calibrated
	rep, err := calibtest.Run(context.Background(), f, y, 4, nil, calibtest.Options{Resamples: 199, Seed: 1})
	if err != nil {
		panic(err)
	}
	for _, t := range rep.Tests {
		fmt.Printf("%s %s reject=%v\n", t.Test, t.Notion, t.Reject)
	}
	fmt.Println(rep.Answer)
	// Output:
	// ks top_label reject=false
	// ks class_wise reject=false
	// kuiper top_label reject=false
	// kuiper class_wise reject=false
	// spiegelhalter top_label reject=false
	// spiegelhalter class_wise reject=false
	// ece_bin top_label reject=false
	// temperature_score canonical reject=false
	// prior_score canonical reject=false
	// no evidence of miscalibration at the 5 % level for any notion; the smallest p-value is 0.324 (spiegelhalter, top_label)
}
