package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// TestRun: Run writes the validation and test logits and labels (read
// back as a logit folder, the labels those of the split) and model.json
// with the provenance; WriteText says what it did; a missing table and a
// bad split are input errors.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	o := RunOptions{Data: "tabular/vehicle.csv.gz", Dir: dir, Val: 0.2, Test: 0.2, SplitSeed: 1,
		Config: Config{Epochs: 1, Batch: 64}, Provenance: &data.Provenance{Command: "calib train"}}
	out, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTable(o.Data)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := StratifiedSplit(tb.Labels, tb.K, 0.2, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for part, rows := range map[string][]int{"val": sp.Val, "test": sp.Test} {
		s, err := data.Load(filepath.Join(dir, part+"_logits.npy"), data.Options{Labels: filepath.Join(dir, part+"_labels.npy"), Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		if s.N != len(rows) || s.K != tb.K || s.Labels[0] != tb.Labels[rows[0]] {
			t.Errorf("%s: n %d, K %d", part, s.N, s.K)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "model.json"))
	var saved map[string]any
	if err := json.Unmarshal(b, &saved); err != nil || saved["provenance"].(map[string]any)["command"] != "calib train" || saved["n_test"] != float64(len(sp.Test)) {
		t.Errorf("model.json: %v %.200s", err, b)
	}
	if out.Epochs != 1 || out.Config.Batch != 64 || out.Model == nil {
		t.Errorf("output %+v", out)
	}
	var text bytes.Buffer
	if err := out.WriteText(&text); err != nil || !strings.Contains(text.String(), "xe on tabular/vehicle.csv.gz (n = 846, K = 4; ") ||
		!strings.Contains(text.String(), "wrote "+dir+"/{val,test}_{logits,labels}.npy and model.json") {
		t.Errorf("text %q: %v", text.String(), err)
	}
	for _, bad := range []RunOptions{{Data: "tabular/nope.csv", Dir: dir, Val: 0.2, Test: 0.2}, {Data: o.Data, Dir: dir, Val: 0.6, Test: 0.5}} {
		if _, err := Run(bad); !errors.Is(err, ErrInput) {
			t.Errorf("%+v: %v, want ErrInput", bad, err)
		}
	}
}
