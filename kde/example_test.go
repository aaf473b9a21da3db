package kde_test

import (
	"context"
	"fmt"
	"log"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// Estimate the canonical and top-label L1 and L2 calibration errors of a
// golden input at a fixed bandwidth (values match the reference code).
func ExampleEstimate() {
	s, err := data.Load("../testdata/golden/ecekde/c02_n200_k3.csv", data.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, notion := range []kde.Notion{kde.Canonical, kde.TopLabel} {
		res, err := kde.Estimate(context.Background(), notion, s.Probs, s.Labels, s.K, nil, kde.Options{Bandwidth: 0.05, P: []float64{1, 2}})
		if err != nil {
			log.Fatal(err)
		}
		for _, v := range res.Values {
			fmt.Printf("%s p=%g: CE_p^p = %.6f, CE_p = %.6f\n", notion, v.P, v.Value, v.Root)
		}
	}
	// Output:
	// canonical p=1: CE_p^p = 0.180783, CE_p = 0.180783
	// canonical p=2: CE_p^p = 0.025744, CE_p = 0.160450
	// top_label p=1: CE_p^p = 0.075854, CE_p = 0.075854
	// top_label p=2: CE_p^p = 0.007111, CE_p = 0.084328
}

// Choose the bandwidth by leave-one-out maximum likelihood.
func ExampleSelectBandwidth() {
	s, err := data.Load("../testdata/golden/ecekde/c02_n200_k3.csv", data.Options{})
	if err != nil {
		log.Fatal(err)
	}
	cv, err := kde.SelectBandwidth(context.Background(), kde.Canonical, s.Probs, s.Labels, s.K, nil, kde.BandwidthOptions{Objective: kde.Reference})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reference objective: h = %.6g (grid index %d)\n", cv.Bandwidth, cv.Index)
	// Output:
	// reference objective: h = 0.00372759 (grid index 9)
}
