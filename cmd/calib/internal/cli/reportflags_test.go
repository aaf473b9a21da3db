package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/cmd/calib/internal/commands"
)

// TestReportPValuesNoPanic: report with --p-values carries the p-value
// column (report and demo with --p-values panicked; their options:
// TestReportPValuesOptions).
func TestReportPValuesNoPanic(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	_, stderr, code := run(t, "report", golden+"c02_n200_k3.csv", "--p-values", "--p-resamples", "19", "--metrics", "ece_bin,brier", "--tests=false", "--ci=false", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "p-value") {
		t.Error("the report has no p-value column")
	}
}

// TestReportCalibratorApplied: report --calibrator applies the map (it was
// ignored: the report showed the uncalibrated numbers), so its table is
// eval --calibrator's; report --json prints that table as eval --json
// does (it did nothing).
func TestReportCalibratorApplied(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.json")
	if _, stderr, code := run(t, "fit", golden+"c06_n150_k3_exact_zeros.csv", "--method", "histogram", "-o", m); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, stderr)
	}
	values := func(stdout string) map[string]float64 {
		var ev struct {
			Results []struct {
				Metric string
				Value  float64
			}
		}
		if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
			t.Fatalf("%v: %q", err, stdout)
		}
		v := map[string]float64{}
		for _, r := range ev.Results {
			v[r.Metric] = r.Value
		}
		return v
	}
	args := []string{golden + "c02_n200_k3.csv", "--metrics", "brier,nll,accuracy", "--json"}
	stdout, stderr, code := run(t, append([]string{"eval", "--calibrator", m}, args...)...)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	want := values(stdout)
	stdout, stderr, code = run(t, append([]string{"eval"}, args...)...)
	if code != 0 {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	raw := values(stdout)
	out := filepath.Join(dir, "r.html")
	stdout, stderr, code = run(t, append([]string{"report", "--calibrator", m, "--tests=false", "--ci=false", "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	got := values(stdout)
	if want["brier"] == raw["brier"] {
		t.Fatalf("the map changes nothing: %v", want)
	}
	for _, k := range []string{"brier", "nll", "accuracy"} {
		if got[k] != want[k] {
			t.Errorf("%s: report --calibrator %v, eval --calibrator %v (uncalibrated %v)", k, got[k], want[k], raw[k])
		}
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "calibrated by") || !strings.Contains(string(b), "histogram") {
		t.Error("the report does not say it shows calibrated predictions")
	}
	if _, stderr, code := run(t, "report", golden+"c02_n200_k3.csv", "--calibrator", filepath.Join(dir, "none.json"), "-o", out); code != 2 || !strings.Contains(stderr, "none.json") {
		t.Errorf("missing map: exit %d: %s", code, stderr)
	}
}

// TestNoSilentTestFlag: every flag of calib test, eval --p-values and
// report with a value that cannot work or would be ignored is refused with
// exit 2 and a message naming the flag, before the data is read.
func TestNoSilentTestFlag(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.csv")
	out := filepath.Join(dir, "r.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"test", missing, "--resamples", "1"}, "at least 19 resamples"},
		{[]string{"test", missing, "--resamples", "50", "--alpha", "0.01"}, "at least 99 resamples"},
		{[]string{"test", missing, "--resamples", "0"}, "--resamples"},
		{[]string{"test", missing, "--resamples", "1000000000"}, "--resamples"},
		{[]string{"test", missing, "--resamples", "5e9"}, "without an exponent"},
		{[]string{"test", missing, "--resamples", "5000000000"}, "--resamples"},
		{[]string{"test", missing, "--resamples", "99999999999999999999"}, "too large"},
		{[]string{"test", missing, "--alpha", "0"}, "--alpha"},
		{[]string{"test", missing, "--alpha", "1"}, "--alpha"},
		{[]string{"test", missing, "--alpha", "NaN"}, "--alpha"},
		{[]string{"test", missing, "--tests", ""}, "--tests"},
		{[]string{"test", missing, "--tests", " , "}, "--tests"},
		{[]string{"test", missing, "--tests", "ks,nope"}, "unknown test"},
		{[]string{"test", missing, "--tests", "ks,ks"}, "ks given twice"},
		{[]string{"test", missing, "--workers", "-1"}, "--workers"},
		{[]string{"eval", missing, "--p-values", "--p-resamples", "1"}, "--p-resamples"},
		{[]string{"eval", missing, "--p-values", "--p-resamples", "3"}, "--p-resamples"},
		{[]string{"eval", missing, "--p-values", "--p-resamples", "0"}, "--p-resamples"},
		{[]string{"eval", missing, "--p-values", "--p-resamples", "1e9"}, "--p-resamples"},
		{[]string{"eval", missing, "--p-values", "--p-resamples", "2000000"}, "--p-resamples"},
		{[]string{"eval", missing, "--p-resamples", "100"}, "add --p-values"},
		{[]string{"report", missing, "-o", out, "--p-resamples", "100"}, "add --p-values"},
		{[]string{"report", missing, "-o", out, "--p-values", "--p-resamples", "2"}, "--p-resamples"},
		{[]string{"report", missing, "-o", out, "--ci-resamples", "1"}, "--ci-resamples"},
		{[]string{"report", missing, "-o", out, "--calibrator", filepath.Join(dir, "none.json")}, "none.json"},
		{[]string{"demo", "--p-values", "--p-resamples", "5"}, "--p-resamples"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != ExitInput || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "missing.csv") || strings.Contains(stderr, "strconv") {
			t.Errorf("%q: exit %d, %q; want exit 2 with %q before the data", c.args, code, stderr, c.want)
		}
	}
}

// TestTestDefaultSeedIsTheReports: calib test's --seed defaults to 1, the
// seed of report (and every command), so both print the same p-values.
func TestTestDefaultSeedIsTheReports(t *testing.T) {
	f := commands.New("test").Flags().Lookup("seed")
	if f == nil || f.DefValue != "1" {
		t.Fatalf("calib test --seed default %v", f)
	}
	for _, c := range NewRoot().Commands() {
		if f := c.Flags().Lookup("seed"); f != nil && f.DefValue != "1" {
			t.Errorf("%s --seed defaults to %s", c.Name(), f.DefValue)
		}
	}
}

// FuzzTestFlags parses any arguments as the flags of calib test (and of
// eval --p-values) on a file that does not exist: whatever they are, the
// command refuses them, or the missing file, with exit 2 and one line
// (or prints its help), never a panic or another status.
func FuzzTestFlags(f *testing.F) {
	for _, a := range []string{
		"--tests ks,kuiper --resamples 99 --alpha 0.01 --seed 3",
		"--tests all --json --workers 2",
		"--resamples 1 --alpha 0",
		"eval --p-values --p-resamples 19",
		"--tests , --resamples 5e9",
	} {
		f.Add(a)
	}
	missing := filepath.Join(f.TempDir(), "missing.csv")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		cmd := "test"
		if len(args) > 0 && args[0] == "eval" {
			cmd, args = "eval", args[1:]
		}
		for _, a := range args {
			if a == "-h" || a == "--help" || strings.HasPrefix(a, "--help=") {
				return
			}
		}
		stdout, stderr, code := run(t, append([]string{cmd, missing}, args...)...)
		if code != ExitInput || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "calib: ") {
			t.Errorf("%s %q: exit %d, stdout %q, stderr %q", cmd, args, code, stdout, stderr)
		}
	})
}

// TestDemoRefusalLeavesNoDirectory: calib demo refusing a flag (here
// --smece-sigma, checked with the metric options) leaves no empty
// calib-demo-* directory behind.
func TestDemoRefusalLeavesNoDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, stderr, code := run(t, "demo", "--smece-sigma", "5"); code != ExitInput || !strings.Contains(stderr, "--smece-sigma") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
