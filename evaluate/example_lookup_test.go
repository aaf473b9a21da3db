package evaluate_test

import (
	"context"
	"fmt"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Example_lookup is docs/library.md's example of the main job: evaluate
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
	// evaltext.WriteText(os.Stdout, ev) prints calib eval's table, evaluate.WriteJSON its --json.
	h := ev.Lookup(evaluate.Headline) // the number to report: the canonical CE_1, with its interval
	fmt.Printf("%-15s %-9s %.4f [%.4f, %.4f]\n", h.Metric, h.Notion, float64(*h.Value), float64(h.Interval[0]), float64(h.Interval[1]))
	for _, k := range []evaluate.Key{
		evaluate.PaperNumber, // the number papers print: the 15-bin top-label ECE
		{Metric: evaluate.KS, Notion: "top_r", R: 1},
		{Metric: evaluate.Accuracy},
	} {
		fmt.Printf("%-15s %-9s %.4f\n", k.Metric, k.Notion, float64(*ev.Lookup(k).Value))
	}
	// Output:
	// ece_variational canonical 0.2165 [0.0770, 0.3564]
	// ece_bin         top_label 0.1082
	// ks              top_r     0.1062
	// accuracy                  0.7000
}
