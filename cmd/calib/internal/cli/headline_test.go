package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/calib-dev/calib/cmd/calib/internal/demo"
	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/report"
)

// headlineOf returns the headline entry of a calib eval --json (or calib
// demo --json) document, as the document's "headline" key names it.
func headlineOf(t *testing.T, what, doc string) *evaluate.Result {
	t.Helper()
	var ev evaluate.Evaluation
	if err := json.Unmarshal([]byte(doc), &ev); err != nil {
		t.Fatalf("%s: %v: %.300s", what, err, doc)
	}
	if ev.Headline == nil || ev.Headline.Metric != evaluate.Headline.Metric || ev.Headline.Loss != evaluate.Headline.Variant {
		t.Fatalf("%s: headline %+v", what, ev.Headline)
	}
	e := ev.Lookup(evaluate.Headline)
	if e == nil || e.Value == nil {
		t.Fatalf("%s: no headline entry", what)
	}
	return e
}

// oneInterval checks that e has its estimator's interval alone (no
// bootstrap keys) and returns it.
func oneInterval(t *testing.T, what string, e *evaluate.Result) evaluate.EntryInterval {
	t.Helper()
	if e.CI != nil || e.CILevel != nil || e.CIMethod != "" || e.CIResamples != nil || e.CISeed != nil || e.CIBias != nil {
		t.Errorf("%s: the headline has a bootstrap interval %v beside its own %v", what, e.CI, e.Interval)
	}
	iv, ok := e.OneInterval()
	if !ok || iv.Kind != "cross-fit" || e.IntervalKind != "cross-fit" || iv.Level != 0.95 {
		t.Fatalf("%s: headline interval %+v (%v, %q)", what, iv, e.Interval, e.IntervalKind)
	}
	return iv
}

// headlineNumbers are the headline's value and interval.
type headlineNumbers struct{ v, lo, hi float64 }

func (h headlineNumbers) String() string { return fmt.Sprintf("%.17g [%.17g, %.17g]", h.v, h.lo, h.hi) }

// format writes the numbers at prec decimals: "V [LO, HI]" (sep between
// the value and the interval).
func (h headlineNumbers) format(prec int, sep string) string {
	return fmt.Sprintf("%.*f%s[%.*f, %.*f]", prec, h.v, sep, prec, h.lo, prec, h.hi)
}

// numbersOf returns the headline numbers of an entry, checking it has one
// interval, its estimator's.
func numbersOf(t *testing.T, what string, e *evaluate.Result) headlineNumbers {
	t.Helper()
	iv := oneInterval(t, what, e)
	return headlineNumbers{float64(*e.Value), iv.Lo, iv.Hi}
}

// printedNumbers reads "V<sep>[LO, HI]" from the line of text that starts
// with the regular expression prefix (then anything, then V); sep is a
// regular expression too. It fails when there is no such line.
func printedNumbers(t *testing.T, what, text, prefix, sep string) headlineNumbers {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + prefix + `.*?\s(\d+\.\d+)` + sep + `\[(-?\d+\.\d+), (-?\d+\.\d+)\]`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("%s: no line %q with a value and an interval in:\n%s", what, prefix, text)
	}
	var h headlineNumbers
	for i, p := range []*float64{&h.v, &h.lo, &h.hi} {
		*p, _ = strconv.ParseFloat(m[i+1], 64)
	}
	return h
}

// The lines that print the headline: calib eval's table row (value, root,
// interval), its note and calib demo's line.
var (
	evalRow  = `ece_variational +canonical +1 +lp loss`
	evalNote = regexp.QuoteMeta("report: " + evaluate.Headline.String() + " =")
	demoLine = regexp.QuoteMeta("  canonical CE_1 (report this)")
)

// TestHeadlineSameEverywhere: on the demo set (the embedded CIFAR-10 test
// split, 10,000 rows) the number to report, evaluate.Headline, has one
// interval, its estimator's cross-fit interval, and every front end shows
// the library's: evaluate.Evaluate's value and interval are calib eval
// --json's bit for bit, with --ci too (no bootstrap interval beside it),
// and calib demo --json's (the report's evaluation); calib eval's table
// row and note, calib demo's headline line and the report's first fact and
// metrics table print them. calib eval --stream computes them by two
// passes whose every fold's sample holds all its rows (variational.Sketch:
// 8,192 rows per fold at K = 10, about 2,000 here), so its numbers are
// the in-memory ones up to the order of the sums (1e-12 relative; its
// table prints the in-memory digits but where a value lies within that of
// a rounding boundary). The numbers are computed, never written here:
// the estimator may change, the front ends must agree. The Python package
// (python/tests/test_headline.py) and calib-beam
// (beam/cmd/calib-beam/headline_test.go) are compared with calib eval the
// same way.
func TestHeadlineSameEverywhere(t *testing.T) {
	logits, labels := filepath.Join("../demo", demo.Name, "test_logits.npy"), filepath.Join("../demo", demo.Name, "test_labels.npy")
	s, err := demo.Load("test")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evaluate.Evaluate(context.Background(), s, evaluate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lib := numbersOf(t, "evaluate.Evaluate", ev.Lookup(evaluate.Headline))
	if !(lib.lo < lib.v && lib.v < lib.hi) {
		t.Errorf("library headline %v: the value outside its interval", lib)
	}
	t.Logf("library: %v", lib)
	exact := func(what string, got headlineNumbers) {
		t.Helper()
		if got != lib {
			t.Errorf("%s: headline %v, the library's %v", what, got, lib)
		}
	}
	printed := func(what string, got headlineNumbers, prec int, want headlineNumbers) {
		t.Helper()
		if g, w := got.format(prec, " "), want.format(prec, " "); g != w {
			t.Errorf("%s prints the headline %s, the library's is %s (%v)", what, g, w, want)
		}
	}
	in := []string{"eval", logits, "--labels", labels, "--logits", "--progress=false"}
	runOK := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("calib %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		return stdout
	}

	// calib eval: the JSON, with and without --ci, and the table.
	exact("calib eval --json", numbersOf(t, "calib eval --json", headlineOf(t, "calib eval --json", runOK(append(in, "--json")...))))
	ci := runOK(append(in, "--json", "--ci", "--ci-resamples", "20", "--metrics", "ece_variational,brier")...)
	exact("calib eval --ci --json", numbersOf(t, "calib eval --ci --json", headlineOf(t, "calib eval --ci --json", ci)))
	if !strings.Contains(ci, `"metric":"brier"`) || !strings.Contains(ci, `"ci":[`) {
		t.Errorf("calib eval --ci: no bootstrap interval for brier: %.500s", ci)
	}
	text := runOK(in...)
	row := printedNumbers(t, "calib eval", text, evalRow, ` +\S+ +`)
	printed("calib eval's table", row, 6, lib)
	note := printedNumbers(t, "calib eval", text, evalNote, ` `)
	printed("calib eval's note", note, 4, lib)

	// calib eval --stream: its JSON within 1e-12 of the library's, its
	// table printing its JSON's digits, which are the library's.
	sdoc := runOK(append(in, "--stream", "--json")...)
	stream := numbersOf(t, "calib eval --stream --json", headlineOf(t, "calib eval --stream --json", sdoc))
	for i, p := range [][2]float64{{stream.v, lib.v}, {stream.lo, lib.lo}, {stream.hi, lib.hi}} {
		if d := math.Abs(p[0] - p[1]); d > 1e-12*math.Abs(p[1]) {
			t.Errorf("calib eval --stream: headline number %d %.17g, the library's %.17g (%.2g apart)", i, p[0], p[1], d)
		}
	}
	stext := runOK(append(in, "--stream")...)
	srow := printedNumbers(t, "calib eval --stream", stext, evalRow, ` +\S+ +`)
	printed("calib eval --stream's table", srow, 6, stream)
	if srow.format(6, " ") != row.format(6, " ") && !nearBoundary(lib, stream, 6) {
		t.Errorf("calib eval --stream prints %s, calib eval %s", srow.format(6, " "), row.format(6, " "))
	}
	snote := printedNumbers(t, "calib eval --stream", stext, evalNote, ` `)
	printed("calib eval --stream's note", snote, 4, stream)

	// calib demo: its JSON (the report's evaluation), its headline line
	// and the report it writes.
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	exact("calib demo --json", numbersOf(t, "calib demo --json", headlineOf(t, "calib demo --json",
		runOK("demo", "--json", "--methods", "temperature", "--ci=false", "--progress=false", "-o", filepath.Join(dir, "json.html")))))
	page := filepath.Join(dir, "demo.html")
	dtext := runOK("demo", "--methods", "temperature", "--ci-resamples", "20", "--progress=false", "-o", page)
	dline := printedNumbers(t, "calib demo", dtext, demoLine, `  `)
	printed("calib demo", dline, 4, lib)
	if !strings.Contains(dtext, "(intervals: 95 % cross-fit for the canonical CE_1, 95 % bootstrap for the others)") {
		t.Errorf("calib demo does not say which intervals it prints:\n%.600s", dtext)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	fact := html.EscapeString(report.HeadlineFact) + "</dt><dd>" + lib.format(4, " ")
	if !strings.Contains(string(b), fact) {
		i := strings.Index(string(b), html.EscapeString(report.HeadlineFact))
		t.Errorf("the report has no fact %q; it has %.200q", fact, string(b[max(0, i):]))
	}
	if cell := fmt.Sprintf("[%.6f, %.6f]", lib.lo, lib.hi); !strings.Contains(string(b), cell) {
		t.Errorf("the report's metrics table has no headline interval %s", cell)
	}
}

// nearBoundary reports whether a number of a and the same of b, within
// 1e-12 relative of each other, round to different prec-decimal strings:
// they straddle a rounding boundary.
func nearBoundary(a, b headlineNumbers, prec int) bool {
	for _, p := range [][2]float64{{a.v, b.v}, {a.lo, b.lo}, {a.hi, b.hi}} {
		if fmt.Sprintf("%.*f", prec, p[0]) != fmt.Sprintf("%.*f", prec, p[1]) && math.Abs(p[0]-p[1]) <= 1e-12*math.Abs(p[1]) {
			return true
		}
	}
	return false
}
