package evaluate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/kde"
)

// TestCheckK: the KS r is checked against K only when ks is asked for.
func TestCheckK(t *testing.T) {
	o := Options{KS: KSOptions{R: []int{1, 4}}}
	if err := o.CheckK(3); !errors.Is(err, ErrOptions) || !strings.HasSuffix(err.Error(), "ks-r 4: the predictions have K = 3 classes, so r must be at most 3") {
		t.Errorf("CheckK: %v", err)
	}
	if err := o.CheckK(4); err != nil {
		t.Errorf("CheckK K = 4: %v", err)
	}
	o.Metrics = MetricSet{"brier"}
	if err := o.CheckK(3); err != nil {
		t.Errorf("CheckK without ks: %v", err)
	}
}

// TestVocabularyText: the option types read the text of calib eval's
// flags (empty items skipped; metrics in output order, each once; "all")
// and write it back, and refuse bad items with OptionErrors that start
// with the option's name.
func TestVocabularyText(t *testing.T) {
	var ms MetricSet
	if err := ms.UnmarshalText([]byte(" ks, brier,ks,,ece_kde ")); err != nil || !slices.Equal(ms, MetricSet{"ece_kde", "ks", "brier"}) {
		t.Errorf("MetricSet: %v, %v", ms, err)
	}
	var ps Exponents
	if err := ps.UnmarshalText([]byte("1, 2.5,")); err != nil || !slices.Equal(ps, Exponents{1, 2.5}) || ps.String() != "1,2.5" {
		t.Errorf("Exponents: %v, %v", ps, err)
	}
	var rs Ranks
	if err := rs.UnmarshalText([]byte("1,3")); err != nil || !slices.Equal(rs, Ranks{1, 3}) || rs.String() != "1,3" {
		t.Errorf("Ranks: %v, %v", rs, err)
	}
	if err := rs.UnmarshalText(nil); err != nil || rs == nil || len(rs) != 0 {
		t.Errorf("Ranks empty: %#v, %v (want empty, not nil: no top-r error)", rs, err)
	}
	for in, want := range map[string]Bandwidth{"auto": 0, " AUTO ": 0, "0.05": 0.05, "1e-3": 1e-3} {
		var h Bandwidth
		if err := h.UnmarshalText([]byte(in)); err != nil || h != want {
			t.Errorf("Bandwidth(%q) = %v, %v; want %v", in, h, err, want)
		}
	}
	if Bandwidth(0).String() != "auto" || Bandwidth(0.05).String() != "0.05" {
		t.Errorf("Bandwidth text %q, %q", Bandwidth(0), Bandwidth(0.05))
	}
	for _, c := range []struct {
		v      interface{ UnmarshalText([]byte) error }
		text   string
		option string
		want   string
	}{
		{new(MetricSet), "ks,nope", "metrics", `metrics: unknown metric "nope" (valid: ece_variational, ece_kde, `},
		{new(MetricSet), " , ", "metrics", "metrics: no metric given"},
		{new(Exponents), "1,0.5", "p", fmt.Sprintf(`p "0.5": each p must be a number in [1, %d]`, kde.MaxP)},
		{new(Exponents), "1e308", "p", `p "1e308"`},
		{new(Exponents), ",", "p", "p: no exponent given"},
		{new(Ranks), "1,0", "ks-r", `ks-r "0": each r must be an integer >= 1`},
		{new(Ranks), "x", "ks-r", `ks-r "x"`},
		{new(Bandwidth), "0", "bandwidth", `bandwidth "0": want auto or a positive number`},
		{new(Bandwidth), "Inf", "bandwidth", `bandwidth "Inf"`},
		{new(Bandwidth), "NaN", "bandwidth", `bandwidth "NaN"`},
	} {
		err := c.v.UnmarshalText([]byte(c.text))
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || !errors.Is(err, ErrOptions) || !strings.HasPrefix(err.Error(), ErrOptions.Error()+": "+c.want) {
			t.Errorf("%T %q: error %v, want an OptionError of %s with %q", c.v, c.text, err, c.option, c.want)
		}
	}
}

// TestParseOptions: absent options take their defaults, and a key that is
// no option, given twice, or a stream's in memory is refused by name; a
// stream reads its own.
func TestParseOptions(t *testing.T) {
	o, err := ParseOptions(nil, nil)
	if err != nil || o.Metrics != nil || len(o.P) != 2 || o.Seed != DefaultSeed {
		t.Fatalf("ParseOptions(nil) = %+v, %v", o, err)
	}
	o, err = ParseOptions(map[string]string{"mode": "top_label"}, nil)
	if err != nil || !o.Strict || len(o.Metrics) != 1 || o.Metrics[0] != ECEKDE {
		t.Errorf("mode alone: %+v, %v; want metrics ece_kde, strict", o.Metrics, err)
	}
	for _, c := range []struct {
		text map[string]string
		want string
	}{
		{map[string]string{"nope": "1"}, `unknown option "nope"`},
		{map[string]string{"ci-level": "0.9", "ci_level": "0.8"}, `ci-level given twice (as "ci-level" and "ci_level")`},
		{map[string]string{"eval-points": "100"}, "eval-points applies to a streamed evaluation"},
		{map[string]string{"ci-level": "0.9"}, "ci-level applies to the bootstrap intervals: add --ci"},
		{map[string]string{"metrics": "brier", "ks-r": "2"}, "ks-r applies to"},
	} {
		_, err := ParseOptions(c.text, nil)
		var oe *OptionError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &oe) {
			t.Errorf("ParseOptions(%v): %v, want an OptionError with %q", c.text, err, c.want)
		}
	}
	so, err := ParseStreamOptions(map[string]string{"eval-points": "100", "metrics": "ece_kde"})
	if err != nil || so.EvalPoints.String() != "100" {
		t.Errorf("ParseStreamOptions: %+v, %v", so.EvalPoints, err)
	}
}
