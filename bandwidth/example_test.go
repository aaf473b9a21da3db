package bandwidth_test

import (
	"context"
	"fmt"
	"log"

	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// The bandwidth of the top-label notion on 200 predictions of 3 classes,
// as `calib bandwidth --mode top_label` chooses it.
func ExampleSelect() {
	s, err := data.Load("../testdata/golden/ecekde/c02_n200_k3.csv", data.Options{})
	if err != nil {
		log.Fatal(err)
	}
	r, err := bandwidth.Select(context.Background(), s, kde.TopLabel, kde.BandwidthOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("h = %.4f (%s, refined: %v)\n", r.Bandwidth, r.Objective, r.Refined)
	// Output:
	// h = 0.0023 (loo, refined: true)
}
