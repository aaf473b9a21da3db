package metric

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStateKinds: every sum of the package writes its kind first and
// version second, reads its own form back, and refuses another kind's
// form and a newer version, naming both.
func TestStateKinds(t *testing.T) {
	bins, _ := NewBinSums(BinOptions{})
	ks, _ := NewKSSums(16)
	cells, _ := NewCellSums(3, 4)
	ms, err := NewMMCESums([]float64{0.2, 0.8, 0.5, 0.5}, []int{1, 0}, 2, nil, 0.4)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]any{
		"metric.BinSums":     bins,
		"metric.ScoreSums":   NewScoreSums(),
		"metric.KSSums":      ks,
		"metric.CellSums":    cells,
		"metric.ScoreSketch": NewScoreSketch(),
		"metric.EdgeValues":  NewEdgeValues(nil, 10),
		"metric.MMCESums":    ms,
	}
	for kind, v := range sums {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"kind":"`+kind+`","version":1`) {
			t.Errorf("%s: %.60s", kind, b)
		}
		for other, w := range sums {
			if other == kind {
				if err := json.Unmarshal(b, w); err != nil {
					t.Errorf("%s: its own form: %v", kind, err)
				}
				continue
			}
			if err := json.Unmarshal(b, w); err == nil || !strings.Contains(err.Error(), other+`: the state is a "`+kind+`", not a `+other) {
				t.Errorf("%s read as %s: %v", kind, other, err)
			}
		}
		newer := strings.Replace(string(b), `"version":1`, `"version":9`, 1)
		if err := json.Unmarshal([]byte(newer), v); err == nil || !strings.Contains(err.Error(), kind+": version 9, newer than this calib reads (1 to 1)") {
			t.Errorf("%s version 9: %v", kind, err)
		}
	}
}
