package data_test

import (
	"fmt"
	"io"

	"github.com/calib-dev/calib/data"
)

// ExampleParse reads a CSV of probabilities written with three decimals
// (K columns, then the label): the second row's sum, 1.001, is explained by
// the rounding, so it is rescaled and counted.
func ExampleParse() {
	csv := "p0,p1,p2,label\n0.700,0.200,0.100,0\n0.334,0.333,0.334,2\n"
	s, err := data.Parse("preds.csv", []byte(csv), "", nil, data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("n = %d, K = %d, labels %v, rounded rows %d\n", s.N, s.K, s.Labels, s.Rounded)
	fmt.Printf("row 2: %.4f\n", s.Probs[3:6])
	// Output:
	// n = 2, K = 3, labels [0 2], rounded rows 1
	// row 2: [0.3337 0.3327 0.3337]
}

// ExampleNew builds a set from logits in memory: softmax in float64.
func ExampleNew() {
	s, err := data.New([]float64{2, 0, 0, 0, 1, 3}, 3, []int{0, 2}, true, data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", s.Probs)
	// Output: [0.7870 0.1065 0.1065 0.0420 0.1142 0.8438]
}

// ExampleOpenChunks reads a CSV file of 24 rows ten rows at a time: each
// chunk is a validated Set, Offset is the file row of its first row.
func ExampleOpenChunks() {
	c, err := data.OpenChunks("../testdata/golden/ecekde/c13_n24_k3_grad.csv", data.Options{}, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for {
		s, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("rows %d-%d: K = %d\n", c.Offset(), c.Offset()+int64(s.N)-1, s.K)
	}
	fmt.Println(c.BytesRead() == c.Size())
	// Output:
	// rows 0-9: K = 3
	// rows 10-19: K = 3
	// rows 20-23: K = 3
	// true
}
