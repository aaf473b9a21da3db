package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// calib test on the embedded demo's test set: every default test, the
// JSON keys of the issue, the verdicts at alpha and the answer; bad flags
// are usage errors before any data is read.
func TestCalibTest(t *testing.T) {
	const d = "../demo/cifar10_resnet110-brier/"
	stdout, stderr, code := run(t, "test", d+"test_logits.npy", "--labels", d+"test_labels.npy", "--logits", "--json", "--resamples", "200", "--alpha", "0.01")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		N, K   int
		Alpha  float64
		Answer string
		Tests  []struct {
			Test, Notion, Method string
			Statistic            float64
			PValue               *float64 `json:"p_value"`
			Resamples            int
			Reject               bool
			PerClass             []*float64 `json:"per_class"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.N != 10000 || r.K != 10 || r.Alpha != 0.01 || len(r.Tests) != 9 || !strings.HasPrefix(r.Answer, "miscalibrated at the 1 % level") {
		t.Fatalf("%+v", r)
	}
	for _, e := range r.Tests {
		if e.PValue == nil || *e.PValue < 0 || *e.PValue > 1 || e.Reject != (*e.PValue <= 0.01) {
			t.Errorf("%s %s: p %v, reject %v", e.Test, e.Notion, e.PValue, e.Reject)
		}
		if e.Notion == "class_wise" && len(e.PerClass) != 10 {
			t.Errorf("%s class_wise: %d per-class p-values", e.Test, len(e.PerClass))
		}
		if e.Test == "ece_bin" && (e.Resamples != 200 || *e.PValue != 1.0/201) {
			t.Errorf("ece_bin: %d resamples, p %v", e.Resamples, *e.PValue)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "nofile.csv", "--tests", "nope"}, "unknown test"},
		{[]string{"test", "nofile.csv", "--alpha", "2"}, "alpha"},
		{[]string{"test", "nofile.csv", "--resamples", "-3"}, "resamples"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want a usage error with %q", c.args, code, stderr, c.want)
		}
	}
}
