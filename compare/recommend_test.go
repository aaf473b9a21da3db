package compare

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/testenv"
	"github.com/calib-dev/calib/recal"
)

// row is a compare row with a headline h (standard error se) and a test
// NLL; a negative se leaves the headline out.
func row(method string, h, se, nll float64) *Row {
	f := func(v float64) *data.Float { x := data.Float(v); return &x }
	r := &Row{Method: method, NLL: f(nll)}
	if se >= 0 {
		r.Headline, r.HeadlineSE = f(h), f(se)
		r.HeadlineInterval = []data.Float{data.Float(h - 1.96*se), data.Float(h + 1.96*se)}
	}
	return r
}

// TestRecommend checks the rule of Recommend case by case: the lowest
// headline wins unless it worsens the NLL, near-ties go to the lowest
// NLL, and the uncalibrated model is a candidate.
func TestRecommend(t *testing.T) {
	for _, c := range []struct {
		name     string
		rows     []*Row
		want     string
		ties     []string
		worsens  []string
		inReason string
	}{
		{
			// The README's case: the spline's CE_1 is far the lowest but its
			// NLL is above the uncalibrated model's.
			name: "lowest headline worsens NLL",
			rows: []*Row{row("uncalibrated", 0.0513, 0.0039, 0.2044), row("spline", 0.0051, 0.0049, 0.2365),
				row("temperature", 0.0227, 0.0038, 0.1960), row("vector", 0.0300, 0.0010, 0.1800)},
			want: "temperature", ties: []string{"temperature"}, worsens: []string{"spline"},
			inReason: "NLL 0.1960 against 0.2044 uncalibrated; the lowest CE_1 of the rows whose NLL is not above the uncalibrated model's, no other within noise of it; not recommended, their test NLL above the uncalibrated 0.2044: spline 0.2365",
		},
		{
			// platt's CE_1 is the lowest, but boost's is within sqrt(0.0067^2 +
			// 0.0036^2) = 0.0076 of it and its NLL is lower; vector's is 0.0080
			// off, beyond sqrt(0.0067^2 + 0.0001^2), its lower NLL no matter.
			name: "near-tie broken by NLL",
			rows: []*Row{row("uncalibrated", 0.0513, 0.0039, 0.2044), row("platt", 0.0190, 0.0067, 0.1917),
				row("vector", 0.0270, 0.0001, 0.1700), row("boost", 0.0250, 0.0036, 0.1832)},
			want: "boost", ties: []string{"platt", "boost"},
			inReason: "its CE_1 within noise of the lowest of the rows whose NLL is not above the uncalibrated model's (platt 0.0190), and the lowest NLL of the 2 rows within noise of it: platt, boost",
		},
		{
			name: "no map beats the model",
			rows: []*Row{row("uncalibrated", 0.0100, 0.0010, 0.2000), row("temperature", 0.0300, 0.0010, 0.1990),
				row("spline", 0.0050, 0.0010, 0.2100)},
			want: "uncalibrated", ties: []string{"uncalibrated"}, worsens: []string{"spline"},
			inReason: "keep the model as it is: ece_variational 0.0100 [0.0080, 0.0120], NLL 0.2000;",
		},
		{
			// A map within noise of the model whose NLL is lower beats it.
			name: "near-tie with the model",
			rows: []*Row{row("uncalibrated", 0.0100, 0.0030, 0.2000), row("temperature", 0.0120, 0.0030, 0.1990)},
			want: "temperature", ties: []string{"uncalibrated", "temperature"},
		},
		{
			name: "every map worsens NLL",
			rows: []*Row{row("uncalibrated", 0, -1, 0.2000), row("spline", 0.0050, 0.0010, 0.2100), row("isotonic", 0.0060, 0.0010, 0.2200)},
			want: "uncalibrated", worsens: []string{"spline", "isotonic"},
			inReason: "keep the model as it is: NLL 0.2000; no map that does not worsen NLL has a CE_1",
		},
		{
			name: "nothing to rank",
			rows: []*Row{{Method: "uncalibrated"}, {Method: "platt"}},
			want: "", inReason: "nothing to rank",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Recommend(c.rows)
			if r.Method != c.want || !slices.Equal(r.NearTies, c.ties) || !slices.Equal(r.WorsensNLL, c.worsens) || !strings.Contains(r.Reason, c.inReason) {
				t.Errorf("got %s, near-ties %v, worsens %v, reason %q;\nwant %s, %v, %v, reason with %q", r.Method, r.NearTies, r.WorsensNLL, r.Reason, c.want, c.ties, c.worsens, c.inReason)
			}
			for _, row := range c.rows {
				if row.WorsensNLL != slices.Contains(c.worsens, row.Method) {
					t.Errorf("%s: WorsensNLL %v", row.Method, row.WorsensNLL)
				}
				if row.Method == r.Method && r.NLL != row.NLL {
					t.Errorf("recommendation's NLL %v, the row's %v", r.NLL, row.NLL)
				}
			}
		})
	}
}

// TestNearTie: the boundary is the standard error of the difference,
// inclusive; a NaN error counts as 0.
func TestNearTie(t *testing.T) {
	nan := Value(nil)
	for _, c := range []struct {
		a, sa, b, sb float64
		want         bool
	}{
		{0.01, 0.003, 0.015, 0.004, true}, // 0.005 = sqrt(0.003^2 + 0.004^2)
		{0.01, 0.003, 0.0151, 0.004, false},
		{0.0199, 0.003, 0.015, 0.004, true}, // either way round
		{0.01, nan, 0.01, nan, true},
		{0.01, nan, 0.011, nan, false},
	} {
		if got := NearTie(c.a, c.sa, c.b, c.sb); got != c.want {
			t.Errorf("NearTie(%v, %v, %v, %v) = %v", c.a, c.sa, c.b, c.sb, got)
		}
	}
}

// TestRecommendOnTheDemoSet runs the comparison calib demo and the
// README's calib compare example run, every method on the embedded
// CIFAR-10 ResNet-110 set (val 5,000 rows, test 10,000), and checks that
// it recommends one map whose test NLL is not above the uncalibrated
// model's, with the lowest headline of such rows up to noise, and that
// calib compare's text has one best: line naming it. Before the rule,
// the headline's best was the spline, with a test NLL of 0.2365 against
// 0.2044 uncalibrated.
func TestRecommendOnTheDemoSet(t *testing.T) {
	if testing.Short() {
		t.Skip("every method on 15,000 rows: about 20 s on 2 cores")
	}
	load := func(split string) *data.Set {
		logits, labels := testenv.DemoFiles(split)
		s, err := data.Load(logits, data.Options{Labels: labels, Logits: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	val, test := load("val"), load("test")
	c, err := Compare(context.Background(), val, test, Options{Methods: recal.Methods()})
	if err != nil {
		t.Fatal(err)
	}
	rec, unc := c.Recommended, c.Rows[0]
	if rec == nil || rec.Method == "" || rec.NLL == nil || unc.Method != "uncalibrated" {
		t.Fatalf("recommended %+v", rec)
	}
	if !(Value(rec.NLL) <= Value(unc.NLL)) || Value(rec.UncalibratedNLL) != Value(unc.NLL) {
		t.Errorf("recommended %s: test NLL %v, uncalibrated %v", rec.Method, Value(rec.NLL), Value(unc.NLL))
	}
	var spline *Row
	for _, r := range c.Rows {
		if r.Method == string(recal.MethodSpline) {
			spline = r
		}
		if r.Method == rec.Method && (r.WorsensNLL || r.Headline == nil || *r.Headline != *rec.Headline || len(rec.Interval) != 2) {
			t.Errorf("recommended row %+v, recommendation %+v", r, rec)
		}
	}
	if spline == nil || !spline.WorsensNLL || !slices.Contains(rec.WorsensNLL, "spline") || rec.Method == "spline" {
		t.Errorf("the spline (NLL %v) is not flagged, or recommended: %+v", Value(spline.NLL), rec)
	}
	for _, r := range c.Rows {
		if !r.WorsensNLL && r.Headline != nil && r.NLL != nil && Value(r.Headline) < Value(rec.Headline) &&
			!NearTie(Value(r.Headline), Value(r.HeadlineSE), Value(rec.Headline), Value(rec.SE)) {
			t.Errorf("%s: CE_1 %v beyond noise below the recommended %s's %v", r.Method, Value(r.Headline), rec.Method, Value(rec.Headline))
		}
	}
	var text strings.Builder
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	var best []string
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "best:") {
			best = append(best, l)
		}
	}
	if len(best) != 1 || !strings.HasPrefix(best[0], "best: "+rec.Method+" (ece_variational ") || !strings.Contains(best[0], "against 0.2044 uncalibrated") {
		t.Errorf("best lines %q", best)
	}
	t.Logf("%s", best)
}
