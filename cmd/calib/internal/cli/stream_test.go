package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
)

// evalJSON is what the stream tests read of eval --json.
type evalJSON struct {
	N, K       int
	Provenance struct {
		Inputs []struct {
			File string
			N    int
		}
	}
	Results []struct {
		Metric, Notion string
		P              *float64
		R              *int
		Value          float64
		Interval       []float64
		IntervalKind   string `json:"interval_kind"`
		EvalPoints     *int   `json:"eval_points"`
	}
}

func resultKey(metric, notion string, p *float64, r *int) string {
	k := metric + "/" + notion
	if p != nil {
		k += fmt.Sprintf("/p%v", *p)
	}
	if r != nil {
		k += fmt.Sprintf("/r%d", *r)
	}
	return k
}

// eval --stream over a directory of Parquet shards of a real set (and over
// one CSV file) gives eval's exact metrics to 1e-12 and KS bounds that hold
// eval's KS; with --eval-points all and a fixed bandwidth ece_kde is eval's.
// Equal-mass bins with Doane's rule and sharpness too.
func TestEvalStream(t *testing.T) {
	const d = "../../../../testdata/logits/cifar10_densenet121-flsd53/"
	s, err := data.Load(d+"val_logits.npy", data.Options{Labels: d + "val_labels.npy", Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		i0, i1 := i*s.N/3, (i+1)*s.N/3
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("part-%d.parquet", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := data.WriteParquet(f, s.Probs[i0*s.K:i1*s.K], s.K, s.Labels[i0:i1], nil, data.ParquetWriteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	csv := filepath.Join(dir, "all.csv")
	f, _ := os.Create(csv)
	if err := data.WriteCSV(f, s.Probs, s.K, s.Labels); err != nil {
		t.Fatal(err)
	}
	f.Close()
	flags := []string{"--mode", "canonical,top_label", "--bandwidth", "0.02", "--json", "--metrics", "ece_kde,ece_bin,mce,ece_bin_debiased,ks,mmce,brier,nll,accuracy,confidence"}
	read := func(args ...string) evalJSON {
		t.Helper()
		stdout, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		var out evalJSON
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	dataBins := []string{"--json", "--binning", "equal_mass", "--bin-rule", "doane", "--p", "1,2", "--bandwidth", "0.02",
		"--metrics", "ece_bin,mce,ece_bin_debiased,sharpness"}
	for _, flags := range [][]string{flags, dataBins} {
		mem := read(append([]string{"eval", csv}, flags...)...)
		want := map[string]float64{}
		for _, r := range mem.Results {
			want[resultKey(r.Metric, r.Notion, r.P, r.R)] = r.Value
		}
		for _, args := range [][]string{
			{"eval", filepath.Join(dir, "*.parquet"), "--eval-points", "all", "--rows", "700"},
			{"eval", "--stream", csv, "--eval-points", "all", "--rows", "999"},
		} {
			got := read(append(args, flags...)...)
			if in := got.Provenance.Inputs; len(in) != 1 || in[0].N != s.N || !slices.Contains(args, in[0].File) {
				t.Errorf("%v: provenance inputs %+v", args, in)
			}
			if got.N != s.N || len(got.Results) != len(mem.Results) {
				t.Fatalf("%v: n = %d, %d results; in memory %d, %d", args, got.N, len(got.Results), s.N, len(mem.Results))
			}
			for _, r := range got.Results {
				k := resultKey(r.Metric, r.Notion, r.P, r.R)
				w, ok := want[k]
				if !ok {
					t.Errorf("%v: %s not in memory", args, k)
					continue
				}
				if r.Metric == "ks" {
					if !(r.Interval[0] <= w+1e-12 && w <= r.Interval[1]+1e-12) {
						t.Errorf("%v: %s: %v outside [%v, %v]", args, k, w, r.Interval[0], r.Interval[1])
					}
					continue
				}
				if math.Abs(r.Value-w) > 1e-12*math.Max(1, math.Abs(w)) {
					t.Errorf("%v: %s = %.17g, in memory %.17g", args, k, r.Value, w)
				}
			}
		}
	}
	// Errors before any data is read.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", csv, "--eval-points", "10"}, "add --stream"},
		{[]string{"eval", "--stream", csv, "--ci"}, "bootstrap"},
		{[]string{"eval", "--stream", csv, "--eval-points", "0"}, "--eval-points"},
		{[]string{"eval", "--stream", csv, "--metrics", "ece_kde", "--bandwidth-objective", "reference"}, "LOO objective"},
		{[]string{"eval", "--stream", csv, "--metrics", "ece_kde", "--debias"}, "debiased"},
		{[]string{"eval", filepath.Join(dir, "*.parquet"), "--labels", d + "val_labels.npy"}, "3 shards"},
		{[]string{"eval", filepath.Join(dir, "none-*.parquet")}, "none-"},
	} {
		_, stderr, code := run(t, c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", c.args, code, stderr, c.want)
		}
	}
}
