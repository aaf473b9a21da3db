package training

import (
	"slices"
	"testing"

	"github.com/calib-dev/calib/train/tabular"
)

// TestParseSets: "" is every set (nil), names are trimmed, an unknown one
// lists the valid ones.
func TestParseSets(t *testing.T) {
	if sets, err := ParseSets(""); err != nil || sets != nil {
		t.Errorf("all: %v, %v", sets, err)
	}
	if sets, err := ParseSets("dna, vehicle"); err != nil || !slices.Equal(sets, []string{"dna", "vehicle"}) {
		t.Errorf("list: %v, %v", sets, err)
	}
	if _, err := ParseSets("dna,,vehicle"); err == nil || err.Error() != `unknown data set "" (valid: vehicle, dna, satellite, letter, shuttle)` {
		t.Errorf("empty item: %v", err)
	}
	if len(tabular.Names()) != 5 {
		t.Errorf("names %v", tabular.Names())
	}
}
