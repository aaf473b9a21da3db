// Package tabular embeds the five real UCI classification data sets that
// calib trains classifiers on (gzipped CSV, about 800 KB): letter,
// satellite, dna, shuttle and vehicle, exported from the R package mlbench
// 2.1.3 (see README.md in this directory for the sources, sizes and label
// orders). The files are unchanged apart from the gzip compression.
package tabular

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"slices"

	"github.com/calib-dev/calib/train"
)

//go:embed *.csv.gz
var files embed.FS

// Names returns the embedded data sets, smallest first.
func Names() []string { return slices.Clone(setNames) }

var setNames = []string{"vehicle", "dna", "satellite", "letter", "shuttle"}

// Load parses the embedded data set name (one of Names).
func Load(name string) (*train.Table, error) {
	if !slices.Contains(setNames, name) {
		return nil, fmt.Errorf("tabular: unknown data set %q (valid: %v)", name, setNames)
	}
	b, err := files.ReadFile(name + ".csv.gz")
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tabular: %s: %w", name, err)
	}
	return train.ParseTable(name+".csv", zr)
}
