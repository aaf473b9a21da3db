package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
)

// TestParseLists: the list parsers of calib eval's options give the
// values of Options (metrics in output order, each once; "all"; empty
// items skipped) and refuse bad items with ErrOptions errors that start
// with the option's name.
func TestParseLists(t *testing.T) {
	ms, err := ParseMetrics(" ks, brier,ks,,ece_kde ")
	if err != nil || !slices.Equal(ms, MetricSet{"ece_kde", "ks", "brier"}) {
		t.Errorf("ParseMetrics: %v, %v", ms, err)
	}
	if ms, err := ParseMetrics("brier,all"); err != nil || !slices.Equal(ms, Metrics) {
		t.Errorf("ParseMetrics all: %v, %v", ms, err)
	}
	if ps, err := ParseP("1, 2.5,"); err != nil || !slices.Equal(ps, []float64{1, 2.5}) {
		t.Errorf("ParseP: %v, %v", ps, err)
	}
	if rs, err := ParseKSR("1,3"); err != nil || !slices.Equal(rs, []int{1, 3}) {
		t.Errorf("ParseKSR: %v, %v", rs, err)
	}
	if rs, err := ParseKSR(""); err != nil || rs == nil || len(rs) != 0 {
		t.Errorf("ParseKSR empty: %#v, %v (want empty, not nil: no top-r error)", rs, err)
	}
	for in, want := range map[string]float64{"auto": 0, " AUTO ": 0, "0.05": 0.05, "1e-3": 1e-3} {
		if h, err := ParseBandwidth(in); err != nil || h != want {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v", in, h, err, want)
		}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(ParseMetrics("ks,nope")), `metrics: unknown metric "nope" (valid: ece_kde, `},
		{second(ParseMetrics(" , ")), "metrics: no metric given"},
		{second(ParseP("1,0.5")), fmt.Sprintf(`p "0.5": each p must be a number in [1, %d]`, kde.MaxP)},
		{second(ParseP("1e308")), `p "1e308"`},
		{second(ParseP(",")), "p: no exponent given"},
		{second(ParseKSR("1,0")), `ks-r "0": each r must be an integer >= 1`},
		{second(ParseKSR("x")), `ks-r "x"`},
		{second(ParseBandwidth("0")), `bandwidth "0": want auto or a positive number`},
		{second(ParseBandwidth("Inf")), `bandwidth "Inf"`},
		{second(ParseBandwidth("NaN")), `bandwidth "NaN"`},
	} {
		if !errors.Is(c.err, ErrOptions) || !strings.HasPrefix(c.err.Error(), ErrOptions.Error()+": "+c.want) {
			t.Errorf("error %v, want ErrOptions with %q", c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestBandwidthNotionAndKSR: the notion of a bandwidth selection ("" is
// canonical, binary for one column; one notion only) and the KS r checked
// against K only when ks is asked for.
func TestBandwidthNotionAndKSR(t *testing.T) {
	s := loadTest(t) // K = 3
	bin := &data.Set{N: 2, K: 1, Binary: true}
	for _, c := range []struct {
		mode string
		s    *data.Set
		want kde.Notion
	}{{"", nil, kde.Canonical}, {"", s, kde.Canonical}, {"", bin, kde.Binary}, {"top_label", s, kde.TopLabel}, {"all", nil, kde.Canonical}} {
		if n, err := BandwidthNotion(c.mode, c.s); err != nil || n != c.want {
			t.Errorf("BandwidthNotion(%q): %v, %v; want %v", c.mode, n, err, c.want)
		}
	}
	for mode, want := range map[string]string{"canonical,top_label": "bandwidth takes one notion, got 2", "nope": `unknown notion "nope"`, "binary": "needs one-column input"} {
		if _, err := BandwidthNotion(mode, s); !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), want) {
			t.Errorf("BandwidthNotion(%q): %v, want %q", mode, err, want)
		}
	}
	if _, err := BandwidthNotion("all", s); err == nil || !strings.Contains(err.Error(), "got 3") {
		t.Errorf("all on K = 3: %v", err)
	}
	o := Options{KSR: []int{1, 4}}
	if err := CheckKSR(o, 3); !errors.Is(err, ErrOptions) || !strings.HasSuffix(err.Error(), "ks-r 4: the predictions have K = 3 classes, so r must be at most 3") {
		t.Errorf("CheckKSR: %v", err)
	}
	if err := CheckKSR(o, 4); err != nil {
		t.Errorf("CheckKSR K = 4: %v", err)
	}
	o.Metrics = MetricSet{"brier"}
	if err := CheckKSR(o, 3); err != nil {
		t.Errorf("CheckKSR without ks: %v", err)
	}
}

// TestTextParse: Text sets the fields it holds and leaves the others; a
// list of metrics makes Evaluate strict; each error names its option.
func TestTextParse(t *testing.T) {
	text := Text{P: "1", Bandwidth: "0.1", Objective: "reference", Metrics: "ks,ece_kde", Binning: "equal-mass", BinRule: "doane", KSR: "1,2"}
	o := Options{Mode: "canonical", Seed: 7}
	if err := text.Parse(&o, loadTest(t)); err != nil {
		t.Fatal(err)
	}
	want := Options{Mode: "canonical", Seed: 7, P: []float64{1}, Bandwidth: 0.1, Objective: kde.Reference, Metrics: MetricSet{"ece_kde", "ks"}, Strict: true,
		Bins: metric.BinOptions{Binning: metric.EqualMass, Rule: metric.Doane}, KSR: []int{1, 2}}
	if !slices.Equal(o.P, want.P) || o.Bandwidth != want.Bandwidth || o.Objective != want.Objective || !slices.Equal(o.Metrics, want.Metrics) ||
		o.Strict != want.Strict || o.Bins != want.Bins || !slices.Equal(o.KSR, want.KSR) || o.Seed != 7 || o.Mode != "canonical" {
		t.Errorf("parsed %+v\nwant %+v", o, want)
	}
	base := Text{P: "1,2", Bandwidth: "auto", Objective: "loo", Binning: "equal_width", BinRule: "fixed", KSR: "1,2"}
	if o := (Options{}); base.Parse(&o, nil) != nil || o.Metrics != nil || o.Strict {
		t.Errorf("no metrics: %+v", o)
	}
	for _, c := range []struct {
		edit func(*Text, *Options)
		want string
	}{
		{func(_ *Text, o *Options) { o.Mode = "nope" }, "mode: unknown notion"},
		{func(t *Text, _ *Options) { t.Objective = "x" }, "bandwidth-objective: unknown bandwidth objective"},
		{func(t *Text, _ *Options) { t.Binning = "x" }, "binning: unknown binning"},
		{func(t *Text, _ *Options) { t.BinRule = "x" }, "bin-rule: unknown bin rule"},
		{func(t *Text, _ *Options) { t.Metrics = "x" }, "metrics: unknown metric"},
		{func(t *Text, _ *Options) { t.KSR = "1,4" }, "ks-r 4: the predictions have K = 3"},
	} {
		tx, o := base, Options{}
		c.edit(&tx, &o)
		if err := tx.Parse(&o, loadTest(t)); !errors.Is(err, ErrOptions) || !strings.HasPrefix(err.Error(), ErrOptions.Error()+": "+c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// TestSelectBandwidth: the report holds kde.SelectBandwidth's selection
// (values compared against it directly), renders as calib bandwidth
// prints it (null for -Inf in the JSON), and refuses a set of one sample.
func TestSelectBandwidth(t *testing.T) {
	s := loadTest(t)
	r, err := SelectBandwidth(context.Background(), s, kde.TopLabel, kde.BandwidthOptions{Objective: kde.Reference})
	if err != nil {
		t.Fatal(err)
	}
	cv, err := kde.SelectBandwidth(kde.TopLabel, s.Probs, s.Labels, s.K, nil, kde.BandwidthOptions{Objective: kde.Reference})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bandwidth != cv.Bandwidth || r.Index != cv.Index || r.Notion != "top_label" || r.Objective != "reference" || r.N != 200 || r.K != 3 ||
		len(r.Grid) != len(cv.Grid) || float64(r.LogLikAt) != cv.LogLik {
		t.Errorf("report %+v, selection %+v", r, cv)
	}
	r.LogLik[0] = Float(math.Inf(-1))
	var js, text bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || m["loglik"].([]any)[0] != nil || m["bandwidth"] != r.Bandwidth {
		t.Errorf("JSON %s: %v", js.Bytes(), err)
	}
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"top_label bandwidth (n = 200, K = 3), objective reference", "selected h = ", "<- best grid value"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	one := &data.Set{File: "one.csv", N: 1, K: 3, Probs: []float64{0.2, 0.3, 0.5}, Labels: []int{0}}
	if _, err := SelectBandwidth(context.Background(), one, kde.Canonical, kde.BandwidthOptions{}); !errors.Is(err, data.ErrTooFew) {
		t.Errorf("one sample: %v", err)
	}
}

// TestProvenance: AddInput records a set as read (with the sum of its
// weights) and chains; a nil set adds nothing; Version is never empty.
func TestProvenance(t *testing.T) {
	s := loadTest(t)
	w := make([]float64, s.N)
	for i := range w {
		w[i] = 0.5
	}
	ws := *s
	if err := ws.SetWeights(w); err != nil {
		t.Fatal(err)
	}
	p := (&Provenance{}).AddInput("val", s, "y.npy").AddInput("test", &ws, "").AddInput("x", nil, "")
	want := []Input{{Role: "val", File: s.File, Labels: "y.npy", Kind: "probabilities", N: 200, K: 3},
		{Role: "test", File: s.File, Kind: "probabilities", N: 200, K: 3, WeightSum: 100}}
	if !slices.Equal(p.Inputs, want) {
		t.Errorf("inputs %+v\nwant %+v", p.Inputs, want)
	}
	if (*Provenance)(nil).AddInput("", s, "") != nil {
		t.Error("nil provenance")
	}
	if Version() == "" {
		t.Error("empty version")
	}
}
