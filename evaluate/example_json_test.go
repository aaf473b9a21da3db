package evaluate_test

import (
	"context"
	"fmt"
	"os"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Example_json is the whole of `calib eval --metrics ece_bin,accuracy
// --json FILE` as a Go program: load, evaluate, write. The times are
// zeroed here only so that the output below is the same on every run; the
// CLI's JSON equals this plus its provenance (TestExampleMatchesCLI).
func Example_json() {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := evaluate.Options{Metrics: []string{"ece_bin", "accuracy"}, Strict: true}
	ev, err := evaluate.Evaluate(context.Background(), s, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	ev.ZeroTimes()
	if err := evaluate.WriteJSON(os.Stdout, ev); err != nil {
		fmt.Println(err)
	}
}
