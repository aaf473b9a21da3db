package data

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/sbinet/npyio/npy"
	"gonum.org/v1/gonum/mat"

	"github.com/calib-dev/calib/atomicfile"
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

// WriteFile writes n rows of k probabilities to the file name, atomically
// (the file is either the old one or the whole new one), in the format of
// its extension (FormatOf): "npy" as WriteNPY, anything else as WriteCSV,
// with labels when not nil.
func WriteFile(name string, probs []float64, k int, labels []int) error {
	return atomicfile.Write(name, func(w io.Writer) error {
		if FormatOf(name) == "npy" {
			return WriteNPY(w, probs, k)
		}
		return WriteCSV(w, probs, k, labels)
	})
}

// WriteNPY writes n rows of k float64 values as an (n, k) C-order NPY array.
func WriteNPY(w io.Writer, probs []float64, k int) error {
	return npy.Write(w, mat.NewDense(len(probs)/k, k, probs))
}
