package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/testenv"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train"
)

const golden = "../../../../testdata/golden/ecekde/"

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestEvalJSONGolden runs eval --json on a golden CSV and compares with the
// reference's log-space canonical value for c02, p = 1 and 2, h = 0.05
// (0.18078305214963955 and the p = 2 value read from c02_n200_k3.json).
func TestEvalJSONGolden(t *testing.T) {
	stdout, stderr, code := run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical,top_label", "--bandwidth", "0.05", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		N, K    int
		Results []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if strings.Count(strings.TrimSpace(stdout), "\n") != 0 {
		t.Errorf("JSON output is not one line/object: %q", stdout)
	}
	if out.N != 200 || out.K != 3 || len(out.Results) != 4 {
		t.Fatalf("n=%d k=%d results=%d", out.N, out.K, len(out.Results))
	}
	r := out.Results[0]
	for _, key := range []string{"metric", "notion", "p", "bandwidth", "value", "root"} {
		if _, ok := r[key]; !ok {
			t.Errorf("result lacks %q", key)
		}
	}
	if r["metric"] != "ece_kde" || r["notion"] != "canonical" || r["p"] != 1.0 || r["bandwidth"] != 0.05 {
		t.Errorf("first result %v", r)
	}
	if v := r["value"].(float64); math.Abs(v-0.18078305214963955) > 1e-9*v {
		t.Errorf("canonical p=1: %v, reference 0.18078305214963955", v)
	}
	if out.Results[2]["notion"] != "top_label" {
		t.Errorf("third result %v", out.Results[2])
	}
}

func TestEvalTable(t *testing.T) {
	stdout, stderr, code := run(t, "eval", golden+"c01_n60_k2.csv", "--metrics", "all", "--bandwidth", "0.1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"n = 60, K = 2", "all = canonical, class_wise, top_label (K <= 20)", "canonical", "class_wise (sum over classes)", "top_label", "CE_p^p", "fixed", "wall time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestEvalBinaryAuto(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.csv")
	var b strings.Builder
	b.WriteString("p1,label\n")
	for i := 0; i < 50; i++ {
		q := (float64(i) + 0.5) / 50
		y := 0
		if i%3 == 0 {
			y = 1
		}
		fmt.Fprintf(&b, "%g,%d\n", q, y)
	}
	os.WriteFile(p, []byte(b.String()), 0o644)
	stdout, stderr, code := run(t, "eval", p, "--metrics", "all", "--json", "--p", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"notion":"binary"`) || !strings.Contains(stdout, `"bandwidth_method":"loo`) || !strings.Contains(stdout, `"warnings":["the objective is largest at the largest grid bandwidth 1;`) {
		t.Errorf("output: %s", stdout)
	}
	if _, stderr, code := run(t, "eval", golden+"c01_n60_k2.csv", "--mode", "binary"); code != 2 || !strings.Contains(stderr, "one-column") {
		t.Errorf("binary on K=2: exit %d, %s", code, stderr)
	}
}

// TestBadInput checks the exit status 2 and the one-line errors that name the
// file, line and column.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("p0,p1,label\n0.5,0.5,0\n0.5,NaN,1\n"), 0o644)
	one := filepath.Join(dir, "one.csv")
	os.WriteFile(one, []byte("0.5,0.5,0\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"eval", bad}, "bad.csv: line 3, column 2: not a finite number"},
		{[]string{"eval", one, "--mode", "canonical"}, "needs at least 2 samples"},
		{[]string{"eval", one, "--metrics", "ece_kde"}, "needs at least 2 samples"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--metrics", "nope"}, "unknown metric"},
		{[]string{"serve", "--maps", dir, "--data", filepath.Join(dir, "state"), "--metrics", "nope"}, `calib: --metrics: unknown metric "nope"`},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--binning", "x"}, "--binning"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--ks-r", "0"}, "--ks-r"},
		{[]string{"eval", filepath.Join(dir, "missing.csv")}, "missing.csv"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--p", "0.5"}, "--p"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--bandwidth", "-1"}, "--bandwidth"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--mode", "nope"}, "unknown notion"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--bandwidth-objective", "x"}, "unknown bandwidth objective"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--format", "xml"}, "--format"},
		{[]string{"eval", golden + "c01_n60_k2.csv", "--nope"}, "unknown flag"},
		{[]string{"eval"}, "takes 1 argument"},
		{[]string{"nope"}, "unknown command"},
	}
	for _, c := range cases {
		_, stderr, code := run(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, stderr)
		}
		if !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "calib: ") {
			t.Errorf("%v: stderr %q, want one line containing %q", c.args, stderr, c.want)
		}
	}
}

func TestBandwidthJSON(t *testing.T) {
	stdout, stderr, code := run(t, "bandwidth", golden+"c02_n200_k3.csv", "--bandwidth-objective", "reference", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Bandwidth float64
		Objective string
		Grid      []float64
		LogLik    []float64
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	// c02_n200_k3.json: loo_mle.input.float64.selected_bandwidth (index 9).
	if out.Bandwidth != 0.003727593692019582 || out.Objective != "reference" || len(out.Grid) != 20 || len(out.LogLik) != 20 {
		t.Errorf("%+v", out)
	}
	stdout, _, code = run(t, "bandwidth", golden+"c02_n200_k3.csv", "--mode", "top_label")
	if code != 0 || !strings.Contains(stdout, "selected h =") || !strings.Contains(stdout, "<- best grid value") {
		t.Errorf("table: %s", stdout)
	}
}

// TestDemo runs the demo: it writes its report into a new temporary
// directory (never the working directory) and says where. By default with
// two quick recalibration methods and 50 resamples (every section, figure and
// metric is still made); CALIB_THOROUGH=1 runs the demo exactly as a user
// does (.ci/run runs that binary too).
func TestDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	args := []string{"demo"}
	if !testenv.Thorough() {
		args = append(args, "--methods", "temperature,isotonic", "--ci-resamples", "50")
	}
	stdout, stderr, code := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"n = 10000, K = 10", "canonical CE_1 (report this)", "plug-in ECE^KDE canonical", "isotonic", "What the numbers mean", "report: " + os.Getenv("TMPDIR")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stderr, "not drawn") {
		t.Errorf("figures missing: %s", stderr)
	}
	if es, _ := os.ReadDir("."); len(es) != 0 {
		t.Errorf("the demo wrote %d files in the working directory", len(es))
	}
	_, after, _ := strings.Cut(stdout, "report: ")
	path, _, _ := strings.Cut(after, " (")
	checkReport(t, path, []string{"reliability", "per-class", "ks", "simplex", "bandwidth", "recalibration"})
}

// TestEvalAllMetrics runs eval --metrics all and --ci on a golden CSV and
// checks the JSON keys of every metric, the grouping and the intervals
// (one per entry: ece_variational's own, the others' bootstrap); a
// metric that cannot be computed, by default or with all, gives an error
// entry and exit 0; eval's default is evaluate.DefaultMetrics.
func TestEvalAllMetrics(t *testing.T) {
	stdout, stderr, code := run(t, "eval", golden+"c02_n200_k3.csv", "--metrics", "all", "--bandwidth", "0.05", "--ci", "--ci-resamples", "50", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Results []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range out.Results {
		m, _ := r["metric"].(string)
		n, _ := r["notion"].(string)
		seen[m+"/"+n] = true
		if _, ok := r["value"]; !ok {
			t.Errorf("%s %s: no value: %v", m, n, r)
		}
		ci, ok := r["ci"].([]any)
		if own, _ := r["interval"].([]any); m == "ece_variational" {
			// One interval per number: its estimator's own, no bootstrap.
			if len(own) != 2 || r["interval_kind"] != "cross-fit" || ok || r["ci_level"] != nil {
				t.Errorf("%s %s: not its own interval alone: %v", m, n, r)
			}
		} else if !ok || len(ci) != 2 || r["ci_level"] != 0.95 || own != nil {
			t.Errorf("%s %s: no bootstrap interval alone: %v", m, n, r)
		} else if v := r["value"].(float64); m != "ece_bin_debiased" && !(ci[0].(float64) <= ci[1].(float64)) {
			t.Errorf("%s %s: interval %v around %v", m, n, ci, v)
		}
		switch m {
		case "ece_bin", "ece_bin_debiased":
			if r["binning"] != "equal_width" && n != "canonical" || r["bins"] == nil || r["p"] == nil || r["root"] == nil {
				t.Errorf("ece_bin keys: %v", r)
			}
		case "mce":
			if _, ok := r["p"]; ok {
				t.Errorf("mce has p: %v", r)
			}
		case "ks":
			if n != "class_wise" && r["r"] == nil || n == "class_wise" && (r["sum"] == nil || r["per_class"] == nil) {
				t.Errorf("ks keys: %v", r)
			}
		case "sharpness":
			if r["bandwidth"] != 0.05 || r["variance"] == nil || n != "top_label" {
				t.Errorf("sharpness keys: %v", r)
			}
		}
	}
	for _, want := range []string{"ece_kde/canonical", "ece_witness/canonical", "ece_kde/class_wise", "ece_kde/top_label", "ece_bin/top_label", "ece_bin/class_wise",
		"ece_bin/canonical", "mce/top_label", "ece_bin_debiased/class_wise", "ks/top_r", "ks/within_top_r", "ks/class_wise",
		"sharpness/top_label", "mmce/top_label", "brier/", "nll/", "accuracy/", "confidence/"} {
		if !seen[want] {
			t.Errorf("no %s entry", want)
		}
	}
	// The table groups by notion.
	stdout, _, code = run(t, "eval", golden+"c02_n200_k3.csv", "--metrics", "all", "--bandwidth", "0.05")
	for _, want := range []string{"CANONICAL", "CLASS-WISE", "TOP-LABEL", "PROPER SCORES", "ks", "mmce", "brier"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	// A metric that fails, by default or with all, is reported, and eval
	// exits 0.
	dir := t.TempDir()
	one := filepath.Join(dir, "one.csv")
	os.WriteFile(one, []byte("0.5,0.5,0\n"), 0o644)
	for _, args := range [][]string{{"eval", one, "--json"}, {"eval", one, "--json", "--metrics", "all"}} {
		stdout, stderr, code = run(t, args...)
		if code != 0 || !strings.Contains(stdout, `"error":`) || !strings.Contains(stdout, `"metric":"brier"`) {
			t.Errorf("%v, one sample: exit %d, %s %s", args, code, stdout, stderr)
		}
	}
	// The default: evaluate.DefaultMetrics, each computed.
	stdout, stderr, code = run(t, "eval", golden+"c02_n200_k3.csv", "--json")
	if code != 0 {
		t.Fatalf("default: exit %d: %s", code, stderr)
	}
	out.Results = nil
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Results {
		if m := r["metric"].(string); !slices.Contains(got, m) {
			got = append(got, m)
		}
		if _, ok := r["error"]; ok {
			t.Errorf("default: %v", r)
		}
	}
	// The headline first; the canonical ece_bin is left out (n = 200 in 82
	// cells: its own warning calls it meaningless), so smece's class-wise
	// entry comes next.
	if !slices.Equal(got, []string{"ece_variational", "smece", "ece_bin", "ks", "brier", "nll", "accuracy", "confidence"}) {
		t.Errorf("default metrics %v", got)
	}
	if r := out.Results[0]; r["metric"] != "ece_variational" || r["notion"] != "canonical" || r["p"] != 1.0 || r["loss"] != "lp" {
		t.Errorf("the first entry is not the headline: %v", r)
	}
	for _, r := range out.Results {
		if r["metric"] == "ece_variational" && r["notion"] != "canonical" {
			t.Errorf("the default computes ece_variational's canonical entries only: %v", r)
		}
		if r["metric"] == "ece_bin" && r["notion"] == "canonical" {
			t.Errorf("the default keeps the meaningless canonical ece_bin: %v", r)
		}
	}
}

// TestFitApply fits both methods on the embedded validation logits, applies
// them, and evaluates with --calibrator: the spline's top-1 KS on test is the
// splines reference's figure with correct interpolation (0.002634122808532563,
// testdata/golden/splines) to 5e-5.
func TestFitApply(t *testing.T) {
	const d = "../demo/cifar10_resnet110-brier/"
	dir := t.TempDir()
	for _, m := range []string{"spline", "temperature"} {
		out := filepath.Join(dir, m+".json")
		if _, stderr, code := run(t, "fit", "--method", m, d+"val_logits.npy", "--labels", d+"val_labels.npy", "--logits", "-o", out); code != 0 {
			t.Fatalf("fit %s: exit %d: %s", m, code, stderr)
		}
		csv := filepath.Join(dir, m+".csv")
		if _, stderr, code := run(t, "apply", out, d+"test_logits.npy", "--logits", "-o", csv); code != 0 {
			t.Fatalf("apply %s: exit %d: %s", m, code, stderr)
		}
		b, _ := os.ReadFile(csv)
		if lines := strings.Count(string(b), "\n"); lines != 10001 {
			t.Errorf("apply %s wrote %d lines", m, lines)
		}
	}
	stdout, stderr, code := run(t, "eval", d+"test_logits.npy", "--labels", d+"test_labels.npy", "--logits",
		"--calibrator", filepath.Join(dir, "spline.json"), "--metrics", "ks", "--ks-r", "1", "--json")
	if code != 0 {
		t.Fatalf("eval --calibrator: exit %d: %s", code, stderr)
	}
	var out struct{ Results []map[string]any }
	json.Unmarshal([]byte(stdout), &out)
	found := false
	for _, r := range out.Results {
		if r["notion"] == "top_r" {
			found = true
			if math.Abs(r["value"].(float64)-0.002634122808532563) > 5e-5 {
				t.Errorf("KS top-1 after the spline: %v", r)
			}
		}
	}
	if !found {
		t.Errorf("no top_r entry: %v", out.Results)
	}
	if _, stderr, code := run(t, "fit", "--method", "nope", d+"val_logits.npy", "--labels", d+"val_labels.npy", "--logits", "-o", filepath.Join(dir, "x.json")); code != 2 || !strings.Contains(stderr, "valid methods") {
		t.Errorf("bad method: exit %d, %s", code, stderr)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"schema_version": 1, "method": "temperature", "input": "logits", "k": 10, "temperature": 0}`), 0o644)
	if _, stderr, code := run(t, "eval", d+"test_logits.npy", "--labels", d+"test_labels.npy", "--logits", "--calibrator", bad); code != 2 || !strings.Contains(stderr, "bad.json") {
		t.Errorf("bad map: exit %d, %s", code, stderr)
	}
}

// TestCompare runs compare on the embedded val/test logits with three quick
// methods: the spline's KS top-1 is the reference's correct-interpolation
// figure and temperature lowers the NLL; the spline's CE_1 is the lowest
// but its test NLL is above the uncalibrated model's, so compare flags it
// and recommends another, whose NLL is not above the uncalibrated one.
func TestCompare(t *testing.T) {
	const d = "../demo/cifar10_resnet110-brier/"
	args := []string{"compare", "--val", d + "val_logits.npy", "--val-labels", d + "val_labels.npy",
		"--test", d + "test_logits.npy", "--test-labels", d + "test_labels.npy", "--methods", "spline,temperature,isotonic", "--json"}
	stdout, stderr, code := run(t, append(args, "--logits")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Rows        []map[string]any
		Recommended *struct {
			Method string
			NLL    *float64
		}
		Best any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rows) != 4 || out.Rows[0]["method"] != "uncalibrated" {
		t.Fatalf("rows %v", out.Rows)
	}
	// One recommendation, by the headline among the rows that do not
	// worsen the NLL; no per-column winners.
	rec, unc := out.Recommended, out.Rows[0]["nll"].(float64)
	if rec == nil || rec.Method == "" || rec.Method == "spline" || rec.NLL == nil || !(float64(*rec.NLL) <= unc) || out.Best != nil {
		t.Errorf("recommended %+v (uncalibrated NLL %v), best %v", rec, unc, out.Best)
	}
	if s := out.Rows[1]; s["worsens_nll"] != true || !(s["nll"].(float64) > unc) || !(s["ece_variational"].(float64) < out.Rows[2]["ece_variational"].(float64)) {
		t.Errorf("spline: %v", s)
	}
	text, stderr, code := run(t, append(args[:len(args)-1], "--logits", "--progress=false")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(text, "\nbest: "); n != 1 || !strings.Contains(text, "\nbest: "+rec.Method+" (ece_variational ") || !strings.Contains(text, "spline 0.2365") {
		t.Errorf("%d best lines:\n%s", n, text)
	}
	for _, r := range out.Rows {
		if w, ok := r["ece_variational"].(float64); !ok || !(w > -0.05 && w < 0.2) {
			t.Errorf("%v: ece_variational %v", r["method"], r["ece_variational"])
		}
	}
	// The uncalibrated CE_1 is above the temperature-scaled one (the model
	// is over-confident): the ranking the plug-in gets backwards.
	if u, s := out.Rows[0]["ece_variational"].(float64), out.Rows[2]["ece_variational"].(float64); !(u > s) {
		t.Errorf("CE_1: uncalibrated %v, temperature %v", u, s)
	}
	if v := out.Rows[1]["ks_top1"].(float64); math.Abs(v-0.002634122808532563) > 5e-5 {
		t.Errorf("spline KS top-1 %v", v)
	}
	if out.Rows[2]["nll"].(float64) >= out.Rows[0]["nll"].(float64) {
		t.Errorf("temperature NLL %v vs %v", out.Rows[2]["nll"], out.Rows[0]["nll"])
	}
}

// checkReport parses an HTML report and checks that it holds the data
// summary, the metrics table and the figure sections (by id) with at least
// one inline <svg> each, and no network URL in any src or href.
func checkReport(t *testing.T, name string, sections []string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	// The standard library's XML decoder in its HTML mode (not strict,
	// HTML void elements closed, HTML entities) checks that the page is
	// well formed as the browser will read it.
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	ids := map[string]bool{}
	svgs := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if el.Name.Local == "svg" {
			svgs++
		}
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "id":
				ids[a.Value] = true
			case "src", "href":
				if strings.Contains(a.Value, "://") || strings.HasPrefix(a.Value, "//") {
					t.Errorf("%s: <%s %s=%q> refers to the network", name, el.Name.Local, a.Name.Local, a.Value)
				}
			}
		}
	}
	for _, s := range append([]string{"summary", "metrics"}, sections...) {
		if !ids[s] {
			t.Errorf("%s: no section %q", name, s)
		}
	}
	if svgs < len(sections) {
		t.Errorf("%s: %d inline <svg> for %d sections", name, svgs, len(sections))
	}
	for _, bad := range []string{`src="http`, `href="http`, `src="//`, `href="//`} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("%s contains %s", name, bad)
		}
	}
}

// TestReportCommand writes reports for a K = 3 set (with a validation
// set: every section) and for degenerate sets (exact zeros and one-hot
// rows, all correct, all wrong), and checks each parses and is
// self-contained.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.html")
	_, stderr, code := run(t, "report", golden+"c04_n1000_k10.csv", "--val", golden+"c11_n400_k5_near_faces.csv", "-o", out)
	if code != 2 || !strings.Contains(stderr, "K = 5") {
		t.Errorf("mismatched K: exit %d, %s", code, stderr)
	}
	stdout, stderr, code := run(t, "report", golden+"c02_n200_k3.csv", "--val", golden+"c06_n150_k3_exact_zeros.csv", "--methods", "spline,temperature,isotonic", "--per-class", "2", "-o", out)
	if code != 0 || !strings.Contains(stdout, "report written to") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	checkReport(t, out, []string{"reliability", "per-class", "ks", "simplex", "bandwidth", "recalibration"})
	b, _ := os.ReadFile(out)
	// temperature needs logits: the comparison says so instead of failing.
	for _, want := range []string{"needs logits", "isotonic", "interval", "class 1"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	for i, f := range []string{"c06_n150_k3_exact_zeros.csv", "c07_n100_k4_onehot_row.csv", "c09_n40_k4_toplabel_one_correct.csv", "c10_n30_k3_toplabel_zero_correct.csv", "c01_n60_k2.csv"} {
		o := filepath.Join(dir, fmt.Sprintf("d%d.html", i))
		_, stderr, code := run(t, "report", golden+f, "-o", o)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", f, code, stderr)
			continue
		}
		checkReport(t, o, []string{"reliability", "ks"})
	}
	if _, stderr, code := run(t, "report", golden+"c02_n200_k3.csv"); code != 2 || !strings.Contains(stderr, "-o") {
		t.Errorf("missing -o: exit %d, %s", code, stderr)
	}
}

// TestPlotCommand draws every figure kind in every format from the CLI and
// checks the errors for bad kinds, extensions and missing --val.
func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	set := golden + "c02_n200_k3.csv"
	for i, pk := range report.PlotKinds() {
		kind := pk.String()
		ext := []string{"png", "svg", "pdf"}[i%3]
		o := filepath.Join(dir, kind+"."+ext)
		args := []string{"plot", kind, set, "-o", o}
		if kind == "compare" || kind == "ks" {
			args = append(args, "--val", golden+"c06_n150_k3_exact_zeros.csv")
		}
		if kind == "compare" {
			args = append(args, "--methods", "isotonic,histogram")
		}
		if kind == "reliability" {
			args = append(args, "--class", "2", "--binning", "equal_mass")
		}
		stdout, stderr, code := run(t, args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", kind, code, stderr)
			continue
		}
		b, err := os.ReadFile(o)
		magic := map[string]string{"svg": "<?xml", "png": "\x89PNG", "pdf": "%PDF"}[ext]
		if err != nil || !bytes.HasPrefix(b, []byte(magic)) || !strings.Contains(stdout, "written to") {
			t.Errorf("%s: %v, %d bytes", kind, err, len(b))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "histogram", set, "-o", filepath.Join(dir, "x.png")}, "unknown figure"},
		{[]string{"plot", "ks", set, "-o", filepath.Join(dir, "x.gif")}, "must end in .svg or .png or .pdf"},
		{[]string{"plot", "compare", set, "-o", filepath.Join(dir, "x.png")}, "needs --val"},
		{[]string{"plot", "reliability", set, "--class", "7", "-o", filepath.Join(dir, "x.png")}, "--class 7"},
		{[]string{"plot", "simplex", golden + "c01_n60_k2.csv", "-o", filepath.Join(dir, "x.png")}, "K >= 3"},
		{[]string{"plot", "simplex", set, "--classes", "1,1", "-o", filepath.Join(dir, "x.png")}, "given twice"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q (want %q)", tc.args, code, stderr, tc.want)
		}
	}
}

// TestExperimentConvergenceQuick runs the quick convergence experiment from
// the command line into a temporary directory.
func TestExperimentConvergenceQuick(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "experiment", "convergence", "--quick", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"convergence.json", "convergence.txt", "convergence-n.svg", "convergence-h.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil || !strings.Contains(stdout, f) {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestEvalDebias: --debias adds ece_kde_debiased entries next to ece_kde,
// equal to kde.Estimate with Options.Debias (checked in package kde).
func TestEvalDebias(t *testing.T) {
	stdout, stderr, code := run(t, "eval", golden+"c02_n200_k3.csv", "--mode", "canonical", "--bandwidth", "0.1", "--debias", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Results []struct {
			Metric string   `json:"metric"`
			Value  *float64 `json:"value"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range out.Results {
		names = append(names, r.Metric)
		if r.Value == nil || !(*r.Value > 0) {
			t.Errorf("%s: value %v", r.Metric, r.Value)
		}
	}
	if strings.Join(names, ",") != "ece_kde,ece_kde,ece_kde_debiased,ece_kde_debiased" {
		t.Errorf("entries %v", names)
	}
	stdout, stderr, code = run(t, "eval", golden+"c02_n200_k3.csv", "--metrics", "sharpness", "--bandwidth", "0.1", "--debias")
	if code != 0 || !strings.Contains(stdout, "sharpness_debiased") {
		t.Errorf("sharpness --debias: exit %d: %s %s", code, stdout, stderr)
	}
}

// TestEvalWitness checks `--metrics ece_witness`: the frozen keys, both
// exponents, the values of kde.Witness on the same input with the --seed,
// and the notes under the table.
func TestEvalWitness(t *testing.T) {
	file := golden + "c02_n200_k3.csv"
	stdout, stderr, code := run(t, "eval", file, "--metrics", "ece_witness", "--seed", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Results []struct {
			Metric, Notion, BandwidthMethod string
			P, Bandwidth, Value, Root       *float64
			CVBandwidth                     *float64 `json:"cv_bandwidth"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	set, err := data.Load(file, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := kde.Witness(context.Background(), set.Probs, set.Labels, set.K, nil, kde.WitnessOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 2 {
		t.Fatalf("%d entries, want 2: %s", len(out.Results), stdout)
	}
	for i, r := range out.Results {
		w := want.Values[i]
		if r.Metric != "ece_witness" || r.Notion != "canonical" || r.P == nil || *r.P != w.P || r.Value == nil || *r.Value != w.Value ||
			r.Root == nil || *r.Root != w.Root || r.Bandwidth == nil || *r.Bandwidth != w.Bandwidth {
			t.Errorf("entry %d: %+v, want p %v value %v root %v h %v", i, r, w.P, w.Value, w.Root, w.Bandwidth)
		}
		if (w.P == 2) != (r.CVBandwidth != nil) || w.P == 2 && *r.CVBandwidth != 2**r.Bandwidth {
			t.Errorf("p = %v: cv_bandwidth %v, bandwidth %v", w.P, r.CVBandwidth, *r.Bandwidth)
		}
	}
	stdout, _, code = run(t, "eval", file, "--metrics", "ece_kde,ece_witness", "--mode", "canonical", "--bandwidth", "0.05")
	for _, note := range []string{"ece_kde: the plug-in ECE^KDE (1/n) sum_j", "ece_witness: the cross-fitted residual witness", "do not report it above K = 4"} {
		if code != 0 || !strings.Contains(stdout, note) {
			t.Errorf("table lacks the note %q:\n%s", note, stdout)
		}
	}
}

// TestExperimentBinnedVsKDEQuick runs the quick binned-vs-kde experiment on
// the embedded set and on a logit folder, and checks a bad --classes.
func TestExperimentBinnedVsKDEQuick(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := run(t, "experiment", "binned-vs-kde", "--classes", "1,1,2", "--quick", "-o", dir); code != 2 {
		t.Errorf("bad classes: exit %d: %s", code, stderr)
	}
	if !testenv.Thorough() {
		t.Skip("the quick runs take 10 s; CALIB_THOROUGH=1 (and .ci/run's own quick run) checks them")
	}
	stdout, stderr, code := run(t, "experiment", "binned-vs-kde", "--quick", "-o", dir)
	if code != 0 || !strings.Contains(stdout, "slope") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "binned-vs-kde-diff.svg")); err != nil {
		t.Error(err)
	}
	_, stderr, code = run(t, "experiment", "binned-vs-kde", "../demo/cifar10_resnet110-brier", "--split", "val", "--quick", "--classes", "3,5,7", "-o", dir)
	if code != 0 {
		t.Errorf("folder: exit %d: %s", code, stderr)
	}
}

// TestExperimentTraining runs the quick training study with one seed and
// checks its outputs; an unknown data set is a usage error.
func TestExperimentTraining(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := run(t, "experiment", "training", "--quick", "--sets", "iris", "-o", dir); code != 2 {
		t.Errorf("unknown set: exit %d: %s", code, stderr)
	}
	if !testenv.Thorough() {
		t.Skip("the quick study takes 10 s; experiment.TestTrainingQuick covers the library, CALIB_THOROUGH=1 (and .ci/run) the command")
	}
	stdout, stderr, code := run(t, "experiment", "training", "--quick", "--seeds", "1", "-o", dir)
	if code != 0 || !strings.Contains(stdout, "| kde-xe 0.2 |") || !strings.Contains(stdout, "Training time per epoch") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	for _, f := range []string{"training.json", "training.txt", "training-tradeoff.svg", "training-tradeoff.png", "runs/vehicle/kde-xe_0.2-seed1.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

}

// TestTrainCommand trains a small KDE-XE model on vehicle and evaluates its
// test logits with calib eval; the weights in model.json reproduce them;
// bad inputs are usage errors.
func TestTrainCommand(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "train", "--data", "../../../../train/tabular/vehicle.csv.gz", "--loss", "kde-xe", "--epochs", "3", "--batch", "64", "-o", dir)
	if code != 0 || !strings.Contains(stdout, "best epoch") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, "eval", filepath.Join(dir, "test_logits.npy"), "--labels", filepath.Join(dir, "test_labels.npy"), "--logits", "--metrics", "accuracy", "--json")
	if code != 0 || !strings.Contains(stdout, `"n":170`) {
		t.Errorf("eval of the trained logits: exit %d: %s %s", code, stdout, stderr)
	}
	// model.json holds weights that reproduce the test logits.
	b, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved train.RunOutput
	if err := json.Unmarshal(b, &saved); err != nil || saved.Model == nil || len(saved.Model.Dense) != 3 {
		t.Fatalf("model.json: %v, %+v", err, saved.Model)
	}
	tb, err := train.ReadTable("../../../../train/tabular/vehicle.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := train.StratifiedSplit(tb.Labels, tb.K, 0.2, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	var x []float64
	for _, i := range sp.Test {
		x = append(x, tb.X[i*tb.D:(i+1)*tb.D]...)
	}
	logits, err := saved.Model.Logits(x, len(sp.Test))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := data.Load(filepath.Join(dir, "test_logits.npy"), data.Options{Labels: filepath.Join(dir, "test_labels.npy"), Logits: true})
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range logits {
		if math.Abs(v-ts.Logits[j]) > 1e-10*math.Max(1, math.Abs(v)) {
			t.Fatalf("model.json logit %d: %v, test_logits.npy %v", j, v, ts.Logits[j])
		}
	}
	for _, args := range [][]string{
		{"train", "--data", "../../../../train/tabular/vehicle.csv.gz", "--loss", "hinge", "-o", dir},
		{"train", "--data", "../../../../train/tabular/vehicle.csv.gz", "--optimizer", "rmsprop", "-o", dir},
		{"train", "--data", "../../../../train/tabular/vehicle.csv.gz", "--lr", "-1", "-o", dir},
		{"train", "--data", "../../../../train/tabular/vehicle.csv.gz", "--dropout", "1", "-o", dir},
		{"train", "--data", "../../../../train/tabular/vehicle.csv.gz"},
		{"train", "--data", "../../../../train/tabular/nope.csv", "-o", dir},
	} {
		if _, stderr, code := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestExperimentWitnessQuick runs `calib experiment witness --quick` on the
// embedded set and on a logit folder, and checks a bad --resamples.
func TestExperimentWitnessQuick(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := run(t, "experiment", "witness", "--quick", "-o", dir)
	if code != 0 || !strings.Contains(stdout, "cifar10_resnet110-brier") || !strings.Contains(stdout, "resampled") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "witness.json")); err != nil {
		t.Error(err)
	}
	stdout, stderr, code = run(t, "experiment", "witness", "--quick", "-o", dir, "../../../../testdata/logits/cifar100_resnet110-brier")
	if code != 0 || !strings.Contains(stdout, "cifar100_resnet110-brier") || !strings.Contains(stdout, " 100 ") {
		t.Errorf("logit folder: exit %d: %s %s", code, stdout, stderr)
	}
	if _, _, code = run(t, "experiment", "witness", "--resamples", "0", "-o", dir); code != 2 {
		t.Errorf("--resamples 0: exit %d, want 2", code)
	}
}
