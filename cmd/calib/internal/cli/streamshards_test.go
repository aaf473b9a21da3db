package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	const d = "../../../../testdata/logits/cifar10_densenet121-flsd53/"
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

// TestStreamShardDirectory: a directory as Spark, Beam and Hadoop leave
// it: empty part files and header-only CSVs are skipped and named (one
// failed the whole stream: "part-1b.csv: no samples"), _SUCCESS markers
// and notes.txt or metadata.json beside .csv shards are not read as data
// and named; the result equals the shards' rows evaluated in memory.
func TestStreamShardDirectory(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(golden + "c02_n200_k3.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	header, rows := lines[0], lines[1:]
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("part-0.csv", header+strings.Join(rows[:120], ""))
	write("part-1.csv", header+strings.Join(rows[120:], ""))
	write("part-1b.csv", header)
	write("part-2.csv", "")
	write("_SUCCESS", "")
	write("notes.txt", "made by hand\n")
	write("metadata.json", `{"model": "x"}`+"\n")
	args := []string{"--metrics", "ece_bin,brier,accuracy", "--json"}
	stdout, stderr, code := run(t, append([]string{"eval", "--stream", dir}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want, stderr, code := run(t, append([]string{"eval", golden + "c02_n200_k3.csv"}, args...)...)
	if code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	var got, mem struct {
		N       int
		Results []struct {
			Metric, Notion string
			Value          float64
		}
		Warnings []string
	}
	json.Unmarshal([]byte(stdout), &got)
	json.Unmarshal([]byte(want), &mem)
	if got.N != 200 || len(got.Results) != len(mem.Results) {
		t.Fatalf("n = %d, %d results; in memory %d, %d", got.N, len(got.Results), mem.N, len(mem.Results))
	}
	for i, r := range got.Results {
		if d := r.Value - mem.Results[i].Value; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s %s: %v, in memory %v", r.Metric, r.Notion, r.Value, mem.Results[i].Value)
		}
	}
	all := strings.Join(got.Warnings, "\n")
	for _, name := range []string{"part-1b.csv", "part-2.csv", "_SUCCESS", "notes.txt", "metadata.json"} {
		if !strings.Contains(all, name) {
			t.Errorf("the warnings do not name %s: %s", name, all)
		}
	}
	// One empty file alone is still an error (exit 2).
	if _, stderr, code := run(t, "eval", "--stream", filepath.Join(dir, "part-2.csv")); code != 2 || !strings.Contains(stderr, "no samples") {
		t.Errorf("one empty file: exit %d: %s", code, stderr)
	}
}

// TestStreamNPYShardsWithLabels: NPY shards get their labels in calib eval
// --stream from --labels naming one labels file per shard (a glob or a
// directory, paired in sorted order, as calib-beam --label-files), and
// the labels files beside the prediction shards in one directory are not
// read as prediction shards; the result is that of the whole set.
func TestStreamNPYShardsWithLabels(t *testing.T) {
	dir := t.TempDir()
	var zs, ys []string
	for i := range 3 {
		z, y := writeLogitSet(t, dir, 200, 4, uint64(10+i))
		zs, ys = append(zs, z), append(ys, y)
	}
	// Whole set: the shards' rows in order.
	var all []float64
	var labels []float64
	for i := range zs {
		s, err := data.Load(zs[i], data.Options{Labels: ys[i], Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s.Logits...)
		for _, y := range s.Labels {
			labels = append(labels, float64(y))
		}
	}
	wz, wy := filepath.Join(t.TempDir(), "all.npy"), filepath.Join(t.TempDir(), "y.npy")
	for _, f := range []struct {
		name string
		v    []float64
		k    int
	}{{wz, all, 4}, {wy, labels, 1}} {
		var b strings.Builder
		if err := data.WriteNPY(&b, f.v, f.k); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(f.name, []byte(b.String()), 0o644)
	}
	args := []string{"--logits", "--metrics", "ece_bin,brier,accuracy", "--json"} // exact sums in a stream (ks there has bounds)
	want, stderr, code := run(t, append([]string{"eval", wz, "--labels", wy}, args...)...)
	if code != 0 {
		t.Fatalf("whole set: exit %d: %s", code, stderr)
	}
	// The directory holds z*.npy and y*.npy: --labels 'DIR/y*.npy'.
	got, stderr, code := run(t, append([]string{"eval", "--stream", dir, "--labels", filepath.Join(dir, "y*.npy")}, args...)...)
	if code != 0 {
		t.Fatalf("stream: exit %d: %s", code, stderr)
	}
	var g, w struct {
		N       int
		Results []struct{ Value float64 }
	}
	json.Unmarshal([]byte(got), &g)
	json.Unmarshal([]byte(want), &w)
	if g.N != 600 || len(g.Results) != len(w.Results) {
		t.Fatalf("stream n = %d, %d results; whole %d, %d", g.N, len(g.Results), w.N, len(w.Results))
	}
	for i := range g.Results {
		if d := g.Results[i].Value - w.Results[i].Value; d > 1e-12 || d < -1e-12 {
			t.Errorf("result %d: %v, whole set %v", i, g.Results[i].Value, w.Results[i].Value)
		}
	}
	// Without labels: a message naming the flag that gives them.
	if _, stderr, code := run(t, "eval", "--stream", filepath.Join(dir, "z*.npy"), "--logits"); code != 2 || !strings.Contains(stderr, "--labels") {
		t.Errorf("no labels: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "eval", "--stream", filepath.Join(dir, "z*.npy"), "--logits", "--labels", ys[0]); code != 2 || !strings.Contains(stderr, "one per shard") {
		t.Errorf("one labels file for 3 shards: exit %d: %s", code, stderr)
	}
}

// TestStreamPipeSecondPass: a pipe as a stream gives the one-pass metrics
// and, for metrics that need a second pass, says that a pipe cannot be
// read twice (it said "no samples").
func TestStreamPipeSecondPass(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.csv")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	src, _ := os.ReadFile(golden + "c02_n200_k3.csv")
	feed := func() {
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.Write(src)
			f.Close()
		}()
	}
	feed()
	if _, stderr, code := run(t, "eval", "--stream", fifo, "--metrics", "ece_bin,brier"); code != 0 {
		t.Errorf("one pass: exit %d: %s", code, stderr)
	}
	feed()
	_, stderr, code := run(t, "eval", "--stream", fifo, "--metrics", "ece_bin,mmce")
	if code != 2 || !strings.Contains(stderr, "cannot be read twice") {
		t.Errorf("two passes: exit %d: %s", code, stderr)
	}
}
