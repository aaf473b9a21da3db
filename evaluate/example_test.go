package evaluate_test

import (
	"context"
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Example loads a prediction file and evaluates it as calib eval does; here
// three metrics, printed from the results in calib eval's order (grouped
// by notion); evaluate.WriteJSON prints them all as calib eval --json does.
// The values are those of calib eval on the same file (README).
func Example() {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{Metrics: evaluate.MetricSet{"ece_bin", "ks", "accuracy"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range ev.Results {
		p := ""
		if r.P != nil {
			p = fmt.Sprintf(" p=%g", *r.P)
		}
		if r.R != nil {
			p = fmt.Sprintf(" r=%d", *r.R)
		}
		fmt.Printf("%s %s%s: %.4f\n", r.Metric, r.Notion, p, float64(*r.Value))
	}
	// Output:
	// ece_bin canonical p=1: 0.5438
	// ece_bin canonical p=2: 0.2482
	// ece_bin class_wise p=1: 0.0994
	// ece_bin class_wise p=2: 0.0262
	// ks class_wise: 0.0549
	// ece_bin top_label p=1: 0.1082
	// ece_bin top_label p=2: 0.0209
	// ks top_r r=1: 0.1062
	// ks top_r r=2: 0.1014
	// ks within_top_r r=2: 0.0176
	// accuracy : 0.7000
}
