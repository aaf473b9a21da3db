package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/calib-dev/calib/data"
)

// writeShards writes the rows of s in n shards part-I.EXT (csv or parquet)
// under dir.
func writeShards(t *testing.T, s *data.Set, dir, ext string, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		i0, i1 := i*s.N/n, (i+1)*s.N/n
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.%s", i, ext)))
		if err != nil {
			t.Fatal(err)
		}
		p, y := s.Probs[i0*s.K:i1*s.K], s.Labels[i0:i1]
		if ext == "parquet" {
			err = data.WriteParquet(f, p, s.K, y, nil, data.ParquetWriteOptions{})
		} else {
			err = data.WriteCSV(f, p, s.K, y)
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestStreamSampleIgnoresNames: the streamed ECE^KDE (from sampled
// evaluation points) is the same whether the shards are named by a
// relative or an absolute path, and for CSV and Parquet copies of the same
// shards: the sample depends on the rows and the seed only (it gave 0.1092
// and 0.1036 for wrn/csv and $PWD/wrn/csv, and CSV and Parquet copies
// differed by up to 30 %).
func TestStreamSampleIgnoresNames(t *testing.T) {
	const d = "../../testdata/logits/cifar10_densenet121-flsd53/"
	s, err := data.Load(d+"val_logits.npy", data.Options{Labels: d + "val_labels.npy", Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeShards(t, s, filepath.Join(dir, "csv"), "csv", 3)
	writeShards(t, s, filepath.Join(dir, "pq"), "parquet", 3)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	value := func(pred string) float64 {
		t.Helper()
		stdout, stderr, code := run(t, "eval", "--stream", pred, "--metrics", "ece_kde", "--mode", "canonical", "--p", "1", "--bandwidth", "0.05", "--eval-points", "200", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", pred, code, stderr)
		}
		var ev struct{ Results []struct{ Value float64 } }
		if err := json.Unmarshal([]byte(stdout), &ev); err != nil || len(ev.Results) != 1 {
			t.Fatalf("%s: %v %s", pred, err, stdout)
		}
		return ev.Results[0].Value
	}
	want := value("csv")
	for _, pred := range []string{filepath.Join(dir, "csv"), "./csv/", "pq", filepath.Join(dir, "pq"), "csv/part-*.csv"} {
		if got := value(pred); got != want {
			t.Errorf("%s: %.17g, csv: %.17g", pred, got, want)
		}
	}
}
