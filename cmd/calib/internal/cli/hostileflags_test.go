package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// hostileValues are, by pflag type, values that no flag of that type takes:
// NaN, infinities, an empty value, a wrong type, a number out of range.
var hostileValues = map[string][]string{
	"float64":  {"nan", "NaN", "inf", "+Inf", "-inf", "", "abc", "1e999", "0x"},
	"int":      {"nan", "inf", "", "abc", "1.5", "99999999999999999999", "-99999999999999999999"},
	"uint64":   {"-1", "nan", "", "abc", "1.5", "99999999999999999999"},
	"bool":     {"maybe", "2", "nan", ""},
	"duration": {"", "abc", "-1s", "0", "1", "nan"},
	// Strings: an empty value (a name list or choice naming nothing) and
	// a wrong name; file flags and free text are listed in hostileTaken.
	"string":      {"", "bogus,", "nan"},
	"stringSlice": {"", "bogus", ","},
}

// hostileTaken lists the flags (command/flag, or flag for every command)
// whose string values are not checked before the data: files, read when
// the data is, and free text.
var hostileTaken = map[string]string{
	"labels": "a file", "weights": "a file", "val": "a file", "val-labels": "a file", "val-weights": "a file",
	"test": "a file", "test-labels": "a file", "test-weights": "a file", "calibrator": "a file", "data": "a file",
	"output": "a file or directory (checked as one: where it cannot be written is the error)", "cpuprofile": "a file",
	"maps": "a directory", "token-file": "a file", "tls-cert": "a file", "tls-key": "a file", "tls-client-ca": "a file",
	"experiment/estimators/estimators": "checked by the experiment's own parser",
	"train/label":                      "a column name, checked against the file's header",
}

// TestHostileFlagValues drives every flag of every command (experiment's
// subcommands too) with values of its type that no flag takes (NaN,
// infinities, empty, a wrong type, out of range) and asserts the outcome
// class: exit 2, the flag named, before any data is read (the input file
// does not exist, so a value let through would be reported as that file's
// error instead).
func TestHostileFlagValues(t *testing.T) {
	// The output goes where no file can be written, so demo and the
	// experiments, which read no input file, stop at -o instead.
	nowhere := "/dev/null/out"
	missing := filepath.Join(t.TempDir(), "nope.csv")
	out := filepath.Join(t.TempDir(), "out")
	base := map[string][]string{
		"eval": {missing}, "test": {missing}, "bandwidth": {missing},
		"fit":     {missing, "--method", "temperature", "-o", out + ".json"},
		"apply":   {missing, missing, "-o", out + ".npy"},
		"compare": {"--val", missing, "--test", missing},
		"report":  {missing, "-o", out + ".html"},
		"plot":    {"reliability", missing, "-o", out + ".png"},
		"demo":    {"-o", nowhere + ".html"},
		"train":   {"--data", missing, "--loss", "xe", "-o", out},
		"serve":   {"--maps", missing},
	}
	cases := 0
	var walk func(path string, cmd *cobra.Command)
	walk = func(path string, cmd *cobra.Command) {
		if cmd.HasSubCommands() {
			for _, c := range cmd.Commands() {
				walk(strings.TrimPrefix(path+"/"+c.Name(), "/"), c)
			}
			return
		}
		name := cmd.Name()
		if name == "help" || name == "completion" || strings.HasPrefix(path, "completion/") {
			return
		}
		args, ok := base[path]
		if strings.HasPrefix(path, "experiment/") {
			args, ok = []string{"-o", nowhere}, true
		}
		if !ok {
			t.Errorf("%s: no base arguments", path)
			return
		}
		args = append(strings.Split(path, "/"), args...)
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			values, ok := hostileValues[f.Value.Type()]
			if !ok {
				t.Errorf("%s --%s: no hostile values for type %s", path, f.Name, f.Value.Type())
				return
			}
			if _, taken := hostileTaken[f.Name]; taken && f.Value.Type() == "string" {
				return
			}
			if _, taken := hostileTaken[path+"/"+f.Name]; taken {
				return
			}
			for _, v := range values {
				cases++
				a := append(append([]string{}, args...), "--"+f.Name+"="+v)
				var stdout, stderr bytes.Buffer
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				code := Main(ctx, a, &stdout, &stderr)
				cancel()
				msg := stderr.String()
				if code != 2 || !strings.Contains(msg, "--"+f.Name) {
					t.Errorf("%s --%s=%q: exit %d, %q; want exit 2 naming --%s", path, f.Name, v, code, strings.TrimSpace(msg), f.Name)
				}
			}
		})
	}
	walk("", NewRoot())
	t.Logf("%d cases", cases)
}
