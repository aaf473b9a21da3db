package data

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"
)

// WriteCSV writes n rows of k probabilities (header p0..p{k-1}), followed
// by the label column when labels is not nil, with the shortest decimals
// that round-trip.
func WriteCSV(w io.Writer, probs []float64, k int, labels []int) error {
	bw := bufio.NewWriter(w)
	for m := 0; m < k; m++ {
		if m > 0 {
			bw.WriteByte(',')
		}
		fmt.Fprintf(bw, "p%d", m)
	}
	if labels != nil {
		bw.WriteString(",label")
	}
	bw.WriteByte('\n')
	buf := make([]byte, 0, 32)
	for i := 0; i < len(probs)/k; i++ {
		for m, v := range probs[i*k : (i+1)*k] {
			if m > 0 {
				bw.WriteByte(',')
			}
			bw.Write(strconv.AppendFloat(buf[:0], v, 'g', -1, 64))
		}
		if labels != nil {
			fmt.Fprintf(bw, ",%d", labels[i])
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WriteNPY writes n rows of k float64 values as an (n, k) C-order NPY array.
func WriteNPY(w io.Writer, probs []float64, k int) error {
	return npy.Write(w, mat.NewDense(len(probs)/k, k, probs))
}
