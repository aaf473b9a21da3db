package commands

import (
	"github.com/calib-dev/calib/data"
)

// loadArrays builds the data.Set of a with the input flags o: the file
// flags name files, which an array has none of.
func loadArrays(a data.Arrays, name string, o data.Options) (*data.Set, error) {
	if o.Format != "" || o.Labels != "" || o.Weights != "" {
		return nil, usageErrorf("%s is an array in memory: --format, --labels and --weights name files (pass the labels and weights as arrays)", name)
	}
	return a.Load(name, o)
}
