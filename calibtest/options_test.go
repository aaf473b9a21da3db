package calibtest

import (
	"math"
	"strings"
	"testing"
)

// TestParseOptions: the defaults are the zero Options' meaning made
// explicit, and every refusal of calib test names its option.
func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil)
	if err != nil || o.Tests != nil || o.Resamples != DefaultResamples || o.Alpha != DefaultAlpha || o.Seed != DefaultSeed || o.MaxSeconds != DefaultMaxSeconds {
		t.Fatalf("ParseOptions(nil) = %+v, %v", o, err)
	}
	o, err = ParseOptions(map[string]string{"tests": "ks, skce", "max_seconds": "0", "resamples": "99", "alpha": "0.1"})
	if err != nil || strings.Join(o.Tests, "|") != "ks|skce" || !math.IsInf(o.MaxSeconds, 1) || o.Resamples != 99 || o.Alpha != 0.1 {
		t.Errorf("ParseOptions = %+v, %v", o, err)
	}
	for _, c := range []struct {
		text map[string]string
		want string
	}{
		{map[string]string{"tests": "nope"}, `tests: unknown test "nope"`},
		{map[string]string{"tests": "ks,,skce"}, `tests "ks,,skce": an empty name between commas`},
		{map[string]string{"resamples": "0"}, `resamples "0": want an integer in [1, 1000000]`},
		{map[string]string{"resamples": "10"}, "resamples 10: a resampled p-value is at least 1/(B+1) = 0.0909, so it could never reach --alpha 0.05; want at least 19 resamples"},
		{map[string]string{"alpha": "1"}, `alpha "1": want a number strictly between 0 and 1`},
		{map[string]string{"max-seconds": "-1"}, `max-seconds "-1": want a finite number of seconds >= 0`},
		{map[string]string{"tests": "skce", "resamples": "500"}, "resamples applies to --tests " + strings.Join(resampledTests, ", ") + ", not skce"},
		{map[string]string{"workers": "-1"}, `workers "-1": want an integer >= 0`},
	} {
		if _, err := ParseOptions(c.text); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseOptions(%v): %v, want %q", c.text, err, c.want)
		}
	}
	// all reads resamples.
	if _, err := ParseOptions(map[string]string{"tests": "all", "resamples": "500"}); err != nil {
		t.Errorf("tests all, resamples 500: %v", err)
	}
}
