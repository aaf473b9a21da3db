package evaluate_test

import (
	"context"
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Example_lookup is the README's library example of the main job: evaluate
// a prediction file as calib eval does without flags (the zero Options),
// and read the numbers by key. The values are calib eval's on the same file.
func Example_lookup() {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{}) // = calib eval FILE
	if err != nil {
		fmt.Println(err)
		return
	}
	// evaluate.WriteText(os.Stdout, ev) prints calib eval's table, WriteJSON its --json.
	for _, k := range []evaluate.Key{
		{Metric: evaluate.ECEWitness, Notion: "canonical", P: 1}, // the number to report
		{Metric: evaluate.ECEBin, Notion: "top_label", P: 1},
		{Metric: evaluate.KS, Notion: "top_r", R: 1},
		{Metric: evaluate.Accuracy},
	} {
		fmt.Printf("%-11s %-9s %.4f\n", k.Metric, k.Notion, float64(*ev.Lookup(k).Value))
	}
	// Output:
	// ece_witness canonical 0.1361
	// ece_bin     top_label 0.1082
	// ks          top_r     0.1062
	// accuracy              0.7000
}
