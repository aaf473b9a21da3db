package evaluate_test

import (
	"context"
	"fmt"
	"os"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
)

// Example_json is the whole of `calib eval --metrics ks,accuracy
// --json FILE` as a Go program: load, evaluate, write. The times are
// zeroed here only so that the output below is the same on every run; the
// CLI's JSON equals this plus its provenance (TestExampleMatchesCLI).
func Example_json() {
	s, err := data.Load("testdata/c02_n200_k3.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := evaluate.Options{Metrics: evaluate.MetricSet{"ks", "accuracy"}, Strict: true}
	ev, err := evaluate.Evaluate(context.Background(), s, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	ev.ZeroTimes()
	if err := evaluate.WriteJSON(os.Stdout, ev); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"version":3,"n":200,"k":3,"results":[{"metric":"ks","notion":"class_wise","value":0.05486441961947483,"sum":0.1645932588584245,"per_class":[0.05516924485387434,0.04231774131571743,0.06710627268883272],"estimator":"ks-cumulative","weighted":false},{"metric":"ks","notion":"top_r","r":1,"value":0.10616690004866658,"seconds":0,"estimator":"ks-cumulative","weighted":false},{"metric":"ks","notion":"top_r","r":2,"value":0.10144697783968598,"estimator":"ks-cumulative","weighted":false},{"metric":"ks","notion":"within_top_r","r":2,"value":0.017621128709992634,"estimator":"ks-cumulative","weighted":false},{"metric":"accuracy","value":0.7,"seconds":0,"estimator":"mean","weighted":false}],"file":"testdata/c02_n200_k3.csv","seconds":0}
}
