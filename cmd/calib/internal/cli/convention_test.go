package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConventionFlags: --convention changes the top-label ece_bin and mce
// (and only those) and every binned entry names its convention; ace,
// atb, tce, ece_sweep and smece run; bad values are usage errors (exit 2)
// before any data is read; calib plot writes a curve's data as JSON.
func TestConventionFlags(t *testing.T) {
	in := golden + "c02_n200_k3.csv"
	stdout, stderr, code := run(t, "eval", in, "--json", "--metrics", "ece_bin,mce,ace,atb,tce,ece_sweep,smece", "--convention", "torchmetrics")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Results []struct {
			Metric, Notion, Convention, Error string
			Value                             *float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range out.Results {
		seen[r.Metric] = true
		if r.Error != "" || r.Value == nil {
			t.Errorf("%s %s: %q", r.Metric, r.Notion, r.Error)
		}
		if r.Metric == "ece_bin" || r.Metric == "mce" {
			want := "calib"
			if r.Notion == "top_label" {
				want = "torchmetrics"
			}
			if r.Convention != want {
				t.Errorf("%s %s: convention %q, want %q", r.Metric, r.Notion, r.Convention, want)
			}
		}
	}
	for _, m := range []string{"ece_bin", "mce", "ace", "atb", "atb_debiased", "tce", "ece_sweep", "smece"} {
		if !seen[m] {
			t.Errorf("no %s entry", m)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", "nope.csv", "--convention", "nope"}, `--convention "nope": unknown convention`},
		{[]string{"eval", "nope.csv", "--ace-bins", "0"}, "--ace-bins"},
		{[]string{"eval", "nope.csv", "--smece-sigma", "2"}, "--smece-sigma"},
		{[]string{"eval", in, "--stream", "--convention", "sklearn"}, "convention"},
		{[]string{"plot", "reliability", "nope.csv", "-o", filepath.Join(t.TempDir(), "r.png"), "--convention", "netcal"}, "-o FILE.json"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
	}
	dir := t.TempDir()
	for _, c := range []struct{ kind, conv, key string }{{"reliability", "netcal", `"convention": "netcal"`}, {"smooth", "calib", `"smece":`}} {
		f := filepath.Join(dir, c.kind+".json")
		if _, stderr, code := run(t, "plot", c.kind, in, "-o", f, "--convention", c.conv); code != 0 {
			t.Fatalf("plot %s: exit %d: %s", c.kind, code, stderr)
		}
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), c.key) || !json.Valid(b) {
			t.Errorf("plot %s -o %s: %v, %.200s", c.kind, f, err, b)
		}
	}
}
