package textenum_test

import (
	"encoding"
	"strings"
	"testing"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// textEnum is what every named enumeration implements.
type textEnum interface {
	encoding.TextMarshaler
	String() string
}

// TestEnumsOneRule: every named enumeration of the library marshals to its
// name and parses it back under the one rule (any case, '-' for '_'), and
// refuses an unknown name.
func TestEnumsOneRule(t *testing.T) {
	cases := []struct {
		values []textEnum
		parse  func(string) (textEnum, error)
	}{
		{[]textEnum{kde.Canonical, kde.ClassWise, kde.TopLabel, kde.Binary}, func(s string) (textEnum, error) { return kde.ParseNotion(s) }},
		{[]textEnum{kde.LOO, kde.Reference}, func(s string) (textEnum, error) { return kde.ParseObjective(s) }},
		{[]textEnum{metric.EqualWidth, metric.EqualMass}, func(s string) (textEnum, error) { return metric.ParseBinning(s) }},
		{[]textEnum{metric.Fixed, metric.Doane, metric.Sqrt}, func(s string) (textEnum, error) { return metric.ParseBinRule(s) }},
		{[]textEnum{metric.Percentile, metric.Centered}, func(s string) (textEnum, error) { return metric.ParseIntervalMethod(s) }},
	}
	for _, c := range cases {
		for _, v := range c.values {
			b, err := v.MarshalText()
			if err != nil || string(b) != v.String() {
				t.Errorf("%v: MarshalText %q, %v", v, b, err)
			}
			for _, s := range []string{string(b), strings.ToUpper(string(b)), " " + strings.ReplaceAll(string(b), "_", "-") + " "} {
				got, err := c.parse(s)
				if err != nil || got != v {
					t.Errorf("parse %q: %v, %v; want %v", s, got, err, v)
				}
			}
		}
		if _, err := c.parse("nope"); err == nil {
			t.Errorf("%T: unknown name accepted", c.values[0])
		}
	}
}
