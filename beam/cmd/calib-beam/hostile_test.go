package main

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// TestHostileFlagValues drives every flag of calib-beam's own (not Beam's)
// with values of its type that no flag takes (NaN, infinities, empty, a
// wrong type, out of range) and asserts the outcome class: refused before
// any file is read, the flag named (a parse error, or a usage error of
// options: both exit 2).
func TestHostileFlagValues(t *testing.T) {
	hostile := map[string][]string{
		"float64": {"nan", "NaN", "inf", "-inf", "", "abc", "1e999"},
		"int":     {"nan", "", "abc", "1.5", "99999999999999999999", "-99999999999999999999"},
		"uint64":  {"-1", "", "abc", "99999999999999999999"},
		"bool":    {"maybe", "2", "nan"},
		"string":  {"", "bogus,", "nan"},
	}
	// Files: any name is taken until the files are read (an empty one
	// is refused for --output only).
	files := map[string]bool{"input": true, "label-files": true, "weight-files": true, "output": true}
	var c config
	probe := flag.NewFlagSet("calib-beam", flag.ContinueOnError)
	c.register(probe)
	cases := 0
	probe.VisitAll(func(f *flag.Flag) {
		typ := strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", f.Value), "*flag."), "Value")
		values, ok := hostile[typ]
		if !ok {
			t.Errorf("--%s: no hostile values for %s", f.Name, typ)
			return
		}
		for _, v := range values {
			if files[f.Name] && (v != "" || f.Name != "output") {
				continue
			}
			cases++
			var c config
			fs := flag.NewFlagSet("calib-beam", flag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			c.register(fs)
			args := []string{"--input", "x", "--" + f.Name + "=" + v}
			if f.Name == "input" {
				args = args[2:]
			}
			err := fs.Parse(args)
			if err == nil {
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				_, err = c.options(set)
				if _, usage := err.(*usageError); err != nil && !usage {
					t.Errorf("--%s=%q: %T %v, want a usage error", f.Name, v, err, err)
					continue
				}
			}
			if err == nil || !strings.Contains(err.Error(), "-"+f.Name) {
				t.Errorf("--%s=%q: %v; want an error naming --%s", f.Name, v, err, f.Name)
			}
		}
	})
	t.Logf("%d cases", cases)
}
