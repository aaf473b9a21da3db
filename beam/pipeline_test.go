package beam

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"

	"github.com/calib-dev/calib/beam/internal/doccmp"
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/metric"
)

// realSet loads the validation set of CIFAR-10 DenseNet-121 FLSD-53 in
// testdata/logits (5,000 rows, K = 10, logits).
func realSet(t *testing.T) *data.Set {
	t.Helper()
	d := "../testdata/logits/cifar10_densenet121-flsd53/"
	s, err := data.Load(d+"val_logits.npy", data.Options{Labels: d + "val_labels.npy", Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// cuts are the first rows of the shards of a 5,000-row set: four shards
// of unequal sizes.
var cuts = []int{0, 1300, 2500, 3750, 5000}

// writeNPYShards writes the logits of s in shards (dir/preds/part-i.npy)
// with their labels in dir/labels/part-i.npy.
func writeNPYShards(t *testing.T, s *data.Set, dir string) {
	t.Helper()
	for _, sub := range []string{"preds", "labels"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := len(s.Logits) / s.N
	for i := range len(cuts) - 1 {
		r := s.Rows(cuts[i], cuts[i+1])
		name := fmt.Sprintf("part-%d.npy", i)
		if err := data.WriteFile(filepath.Join(dir, "preds", name), r.Logits, c, nil); err != nil {
			t.Fatal(err)
		}
		y := make([]float64, r.N)
		for j, l := range r.Labels {
			y[j] = float64(l)
		}
		if err := data.WriteFile(filepath.Join(dir, "labels", name), y, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// writeCSVShards writes the probabilities and labels of s in CSV shards
// dir/part-i.csv.
func writeCSVShards(t *testing.T, s *data.Set, dir string) {
	t.Helper()
	for i := range len(cuts) - 1 {
		r := s.Rows(cuts[i], cuts[i+1])
		if err := data.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.csv", i)), r.Probs, r.K, r.Labels); err != nil {
			t.Fatal(err)
		}
	}
}

// writeParquetShards writes the probabilities, labels and weights
// 1 + (i mod 3) of s in Parquet shards dir/part-i.parquet.
func writeParquetShards(t *testing.T, s *data.Set, dir string) {
	t.Helper()
	for i := range len(cuts) - 1 {
		r := s.Rows(cuts[i], cuts[i+1])
		w := make([]float64, r.N)
		for j := range w {
			w[j] = float64(1 + (cuts[i]+j)%3)
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.parquet", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := data.WriteParquet(f, r.Probs, r.K, r.Labels, w, data.ParquetWriteOptions{RowGroupRows: 400}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// fileSource is the single-process oracle's Source: the shards read in
// their order with data.OpenChunks, each batch named by its shard's file
// name and its offset there, as calib eval --stream names them.
type fileSource struct {
	shards []Shard
	opts   data.Options
	rows   int
}

func (f *fileSource) Open() (data.Batches, error) { return &fileBatches{src: f}, nil }

type fileBatches struct {
	src *fileSource
	i   int
	c   *data.Chunks
}

func (b *fileBatches) Next() (*data.Batch, error) {
	for {
		if b.c == nil {
			if b.i == len(b.src.shards) {
				return nil, io.EOF
			}
			sh := b.src.shards[b.i]
			opts := b.src.opts
			opts.Labels, opts.Weights = sh.Labels, sh.Weights
			c, err := data.OpenChunks(sh.File, opts, b.src.rows)
			if err != nil {
				return nil, err
			}
			b.c = c
		}
		s, err := b.c.Next()
		if err == io.EOF {
			b.c.Close()
			b.c, b.i = nil, b.i+1
			continue
		}
		if err != nil {
			return nil, err
		}
		return &data.Batch{Set: s, Source: b.src.shards[b.i].File, Shard: b.src.shards[b.i].Index, Offset: b.c.Offset()}, nil
	}
}

func (b *fileBatches) Close() error {
	if b.c != nil {
		return b.c.Close()
	}
	return nil
}

// streamDoc returns the `calib eval --json` document of evaluate.Stream
// over the shards.
func streamDoc(t *testing.T, shards []Shard, o Options) []byte {
	t.Helper()
	ev, err := evaluate.Stream(context.Background(), &fileSource{shards: shards, opts: o.Data, rows: o.Rows}, o.Stream)
	if err != nil {
		t.Fatal(err)
	}
	ev.File = o.File
	var b bytes.Buffer
	if err := evaluate.WriteJSON(&b, ev); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sameDoc reports the differences of two documents but the timings.
func sameDoc(t *testing.T, got, want []byte, tol float64) {
	t.Helper()
	diffs := doccmp.Diff(got, want, tol, "seconds")
	for i, d := range diffs {
		if i == 20 {
			t.Errorf("... %d more", len(diffs)-i)
			break
		}
		t.Error(d)
	}
}

// TestPipelineEqualsStream runs the pipeline on Prism over four shards of a
// real set and compares its document with evaluate.Stream's over the same
// files (the oracle): the exact metrics, the KS bounds and ece_kde (the
// same sample of evaluation points: its keys depend on the rows, their
// shard's position, their index there and the seed only) to 1e-12, the merge order changing the sums by rounding only.
func TestPipelineEqualsStream(t *testing.T) {
	s := realSet(t)
	// The kernel metrics beside the default ones (what a stream computed
	// by default before the headline).
	kernel := evaluate.MetricSet{"ece_variational", "ece_kde", "ece_bin", "mce", "ece_bin_debiased", "ks", "mmce", "sharpness", "brier", "nll", "accuracy", "confidence"}
	cases := []struct {
		name   string
		write  func(t *testing.T, s *data.Set, dir string)
		input  string // pattern under the temporary directory
		labels string
		o      Options
	}{
		// The default metrics and the default bandwidth grid (the LOO
		// choice), logits in NPY shards with NPY labels files.
		{name: "npy-logits-grid", write: writeNPYShards, input: "preds", labels: "labels/*.npy",
			o: Options{Stream: evaluate.StreamOptions{EvalPoints: 300}, Data: data.Options{Logits: true}, Rows: 512}},
		// A fixed bandwidth, every p, probabilities in CSV shards with
		// their labels, batches not dividing the shards.
		{name: "csv-fixed-bandwidth", write: writeCSVShards, input: "part-*.csv",
			o: Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: kernel, Bandwidth: 0.05, P: []float64{1, 2}, Seed: 7}, EvalPoints: 200}, Rows: 700}},
		// Weighted Parquet shards (a list column, row groups of 400),
		// the default grid.
		{name: "parquet-weighted", write: writeParquetShards, input: "part-*.parquet",
			o: Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: kernel}, EvalPoints: 250}, Rows: 1000}},
		// Equal-mass bins with Doane's rule (the score sketches and the
		// scores near the edges in the second pass) and a fixed bandwidth.
		{name: "csv-equal-mass", write: writeCSVShards, input: "part-*.csv",
			o: Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: kernel, Bandwidth: 0.05, Bins: metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane}}, EvalPoints: 200}, Rows: 600}},
		// The block-pair plan: every row an evaluation point (the exact
		// estimates) in 3 blocks x 4 shards, data-dependent canonical
		// cells (Sqrt) in block 0, ece_variational's maps and gains too.
		{name: "csv-blocks-exact", write: writeCSVShards, input: "part-*.csv",
			o: Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: kernel, Bandwidth: 0.05, Bins: metric.BinOptions{Rule: metric.Sqrt}}, EvalPoints: evaluate.AllPoints}, Rows: 800, EvalBlocks: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.write(t, s, dir)
			t.Chdir(dir)
			shards, err := Shards(context.Background(), c.input, c.labels, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(shards) != 4 {
				t.Fatalf("%d shards, want 4: %v", len(shards), shards)
			}
			o := c.o
			o.File, o.Output = c.input, "eval.json"
			start := time.Now()
			ev, err := Run(context.Background(), shards, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("pipeline on Prism: %.1f s", time.Since(start).Seconds())
			if ev.N != s.N || ev.K != s.K || len(ev.Results) == 0 {
				t.Fatalf("n = %d, K = %d, %d results; want %d, %d", ev.N, ev.K, len(ev.Results), s.N, s.K)
			}
			got, err := os.ReadFile("eval.json")
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			want := streamDoc(t, shards, o)
			t.Logf("evaluate.Stream: %.1f s", time.Since(start).Seconds())
			sameDoc(t, got, want, 1e-12)
			metrics := map[evaluate.Metric]bool{}
			for _, r := range ev.Results {
				metrics[r.Metric] = true
				if r.Error != "" {
					t.Errorf("%s %s: %s", r.Metric, r.Notion, r.Error)
				}
			}
			wantMetrics := o.Stream.Metrics // the defaults: the in-memory ones but smece, the headline first
			if wantMetrics == nil {
				wantMetrics = evaluate.MetricSet{"ece_variational", "ece_bin", "ks", "brier", "nll", "accuracy", "confidence"}
			}
			for _, m := range wantMetrics {
				if !metrics[m] {
					t.Errorf("no %s in the document", m)
				}
			}
			if ev.Headline == nil {
				t.Error("no headline")
			}
		})
	}
}

// TestPipelineRemote reads the shards and writes the document through
// Beam's filesystem package (memfs://, in memory, as gs:// would be on a
// cluster), without ece_kde (one pass), and compares with evaluate.Stream
// over the same bytes in local files.
func TestPipelineRemote(t *testing.T) {
	s := realSet(t)
	dir := t.TempDir()
	writeCSVShards(t, s, dir)
	ctx := context.Background()
	fs, err := filesystem.New(ctx, "memfs://")
	if err != nil {
		t.Fatal(err)
	}
	var local []Shard
	for i := range len(cuts) - 1 {
		name := fmt.Sprintf("part-%d.csv", i)
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := filesystem.Write(ctx, fs, "memfs://shards/"+name, b); err != nil {
			t.Fatal(err)
		}
		local = append(local, Shard{File: filepath.Join(dir, name)})
	}
	shards, err := Shards(ctx, "memfs://shards/part-*.csv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 4 || shards[0].File != "memfs://shards/part-0.csv" {
		t.Fatalf("shards %v", shards)
	}
	o := Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: evaluate.MetricSet{"ece_bin", "ks", "nll", "accuracy"}}}, Rows: 1000, Output: "memfs://out/eval.json"}
	if _, err := Run(ctx, shards, o); err != nil {
		t.Fatal(err)
	}
	got, err := filesystem.Read(ctx, fs, o.Output)
	if err != nil {
		t.Fatal(err)
	}
	// The oracle reads local copies under the remote names: the names are
	// the rows' identity (only the sample depends on them, and there is
	// none without ece_kde).
	want := streamDoc(t, local, o)
	sameDoc(t, got, want, 1e-12)
}

// TestBuildChecksOptions: bad options are errors of Build, before any
// data is read.
func TestBuildChecksOptions(t *testing.T) {
	shards := []Shard{{File: "no-such-file.csv"}}
	for _, c := range []struct {
		shards []Shard
		o      Options
		want   string
	}{
		{nil, Options{}, "no shards"},
		{shards, Options{Rows: -1}, "rows per batch"},
		{shards, Options{EvalBlocks: -1}, "blocks of evaluation points"},
		{shards, Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Debias: true}}}, "debiased"},
		{shards, Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{Metrics: evaluate.MetricSet{"nope"}}}}, "unknown metric"},
		{shards, Options{Stream: evaluate.StreamOptions{Options: evaluate.Options{CI: true}}}, "bootstrap"},
	} {
		_, err := Run(context.Background(), c.shards, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
}

// TestRunError: a bad row in a shard fails the run with the file and line,
// a missing shard with its name.
func TestRunError(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("a.csv", []byte("p0,p1,label\n0.5,0.5,1\n0.5,0.6,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		shards []Shard
		want   string
	}{
		{[]Shard{{File: "a.csv"}}, "a.csv: line 3"},
		{[]Shard{{File: "missing.csv"}}, "missing.csv"},
	} {
		_, err := Run(context.Background(), c.shards, Options{Stream: evaluate.StreamOptions{EvalPoints: 10}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.shards, err, c.want)
		}
	}
}

// TestShardsPairing: labels files are paired with the prediction files in
// sorted order, and their numbers must match.
func TestShardsPairing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"p/b.npy", "p/a.npy", "l/a.npy", "l/b.npy", "l1/a.npy"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	sh, err := Shards(context.Background(), "p", "l/*.npy", "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Shard{{File: "p/a.npy", Labels: "l/a.npy"}, {File: "p/b.npy", Labels: "l/b.npy", Index: 1}}
	if !slices.Equal(sh, want) {
		t.Errorf("got %v, want %v", sh, want)
	}
	if _, err := Shards(context.Background(), "p", "l1", ""); err == nil || !strings.Contains(err.Error(), "1 labels files for the 2 prediction files") {
		t.Errorf("error %v", err)
	}
	if _, err := Shards(context.Background(), "q/*.csv", "", ""); err == nil {
		t.Error("no error for a pattern that matches nothing")
	}
}

// TestBatchCoder: a batch survives the coder, nil slices apart from
// empty ones, and truncated or altered bytes are errors, never panics.
func TestBatchCoder(t *testing.T) {
	s := realSet(t)
	r := s.Rows(10, 17)
	r.Weights = []float64{1, 2, 0, 0.5, 1, 1, 3}
	r.Renormalized, r.Rounded = 2, 3
	for _, b := range []*data.Batch{
		{Set: r, Source: "gs://b/part-1.npy", Offset: 10},
		{Set: &data.Set{N: 0, K: 3, Probs: []float64{}, Labels: []int{}}, Source: "x"},
		{Set: &data.Set{N: 1, K: 2, Probs: []float64{0.25, 0.75}, Binary: true, Logits: []float64{math.Log(3)}}},
	} {
		enc := EncodeBatch(b)
		got, err := DecodeBatch(enc)
		if err != nil {
			t.Fatal(err)
		}
		if got.Source != b.Source || got.Offset != b.Offset || got.N != b.N || got.K != b.K || got.Binary != b.Binary ||
			got.File != b.File || got.Renormalized != b.Renormalized || got.Rounded != b.Rounded ||
			!slices.Equal(got.Probs, b.Probs) || !slices.Equal(got.Labels, b.Labels) || !slices.Equal(got.Logits, b.Logits) || !slices.Equal(got.Weights, b.Weights) ||
			(got.Labels == nil) != (b.Labels == nil) || (got.Logits == nil) != (b.Logits == nil) || (got.Weights == nil) != (b.Weights == nil) {
			t.Errorf("round trip of %+v gave %+v", b.Set, got.Set)
		}
		for i := range enc {
			if _, err := DecodeBatch(enc[:i]); err == nil {
				t.Errorf("no error for %d of %d bytes", i, len(enc))
			}
		}
	}
}

// TestLibraryHasNoBeam: the calib library module does not depend on Beam
// (it is why this package is a module of its own).
func TestLibraryHasNoBeam(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mod, []byte("apache/beam")) {
		t.Error("../go.mod names apache/beam")
	}
	cmd := exec.Command("go", "list", "-e", "-deps", "-test", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "apache/beam") || strings.HasPrefix(p, "github.com/calib-dev/calib/beam") {
			t.Errorf("the calib module depends on %s", p)
		}
	}
}
