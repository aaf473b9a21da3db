package bandwidth

import (
	"strings"
	"testing"

	"github.com/calib-dev/calib/kde"
)

// TestParseOptions: the defaults, and no-refine refused where the
// reference objective reads it not.
func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	if err != nil || o.Objective != kde.LOO || o.NoRefine || o.Mode != "" {
		t.Fatalf("ParseOptions(nil) = %+v, %v", o, err)
	}
	o, err = ParseOptions(map[string]string{"mode": "top_label", "no_refine": "true", "workers": "2"})
	if err != nil || o.Mode != "top_label" || !o.NoRefine || o.Workers != 2 {
		t.Errorf("ParseOptions = %+v, %v", o, err)
	}
	for text, want := range map[string]string{
		"bandwidth-objective=nope":                     "bandwidth-objective: ",
		"bandwidth-objective=reference no-refine=true": "no-refine applies to --bandwidth-objective loo, not reference",
	} {
		m := map[string]string{}
		for _, kv := range strings.Fields(text) {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		if _, err := ParseOptions(m); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseOptions(%v): %v, want %q", m, err, want)
		}
	}
}
