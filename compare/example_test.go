package compare_test

import (
	"context"
	"fmt"

	"github.com/calib-dev/calib/compare"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/recal"
)

// Example fits two recalibration maps on a validation set and measures
// them, with the uncalibrated predictions, on a test set: calib compare
// --methods temperature,isotonic as a Go program (compare.WriteText prints
// its table). These files hold probabilities, so temperature scaling,
// which needs logits, reports an error in its row and the rest goes on.
func Example() {
	val, err := data.Load("testdata/c07_n100_k4_onehot_row.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	test, err := data.Load("testdata/c09_n40_k4_toplabel_one_correct.csv", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	o := compare.Options{Methods: []recal.Method{recal.MethodTemperature, recal.MethodIsotonic}, Seed: 1}
	c, err := compare.Compare(context.Background(), val, test, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range c.Rows {
		if r.Error != "" {
			fmt.Printf("%-12s error: %s\n", r.Method, r.Error)
			continue
		}
		v := compare.Value // a figure not computed is nil: NaN
		fmt.Printf("%-12s accuracy %.3f  NLL %.3f  top-label ECE %.3f  KS %.3f\n", r.Method, v(r.Accuracy), v(r.NLL), v(r.ECETopLabel), v(r.KSTop1))
	}
	// Output:
	// uncalibrated accuracy 0.025  NLL 2.547  top-label ECE 0.555  KS 0.555
	// temperature  error: needs logits
	// isotonic     accuracy 0.025  NLL 1.887  top-label ECE 0.346  KS 0.346
}
