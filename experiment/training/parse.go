package training

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calib-dev/calib/train/tabular"
)

// ParseSets parses Options.Sets from a comma-separated list of the embedded
// data sets (tabular.Names; surrounding spaces ignored); "" means nil, all
// five. Its error reads `unknown data set "x" (valid: vehicle, ...)`.
func ParseSets(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	sets := strings.Split(list, ",")
	for i := range sets {
		if sets[i] = strings.TrimSpace(sets[i]); !slices.Contains(tabular.Names(), sets[i]) {
			return nil, fmt.Errorf("unknown data set %q (valid: %s)", sets[i], strings.Join(tabular.Names(), ", "))
		}
	}
	return sets, nil
}
