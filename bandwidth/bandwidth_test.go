package bandwidth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// TestSelect: the report holds kde.SelectBandwidth's selection
// (values compared against it directly), renders as calib bandwidth
// prints it (null for -Inf in the JSON), and refuses a set of one sample.
func TestSelect(t *testing.T) {
	s, err := data.Load("../testdata/golden/ecekde/c02_n200_k3.csv", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Select(context.Background(), s, kde.TopLabel, kde.BandwidthOptions{Objective: kde.Reference})
	if err != nil {
		t.Fatal(err)
	}
	cv, err := kde.SelectBandwidth(context.Background(), kde.TopLabel, s.Probs, s.Labels, s.K, nil, kde.BandwidthOptions{Objective: kde.Reference})
	if err != nil {
		t.Fatal(err)
	}
	if r.Bandwidth != cv.Bandwidth || r.Index != cv.Index || r.Notion != "top_label" || r.Objective != "reference" || r.N != 200 || r.K != 3 ||
		len(r.Grid) != len(cv.Grid) || float64(r.LogLikAt) != cv.LogLik {
		t.Errorf("report %+v, selection %+v", r, cv)
	}
	r.LogLik[0] = data.Float(math.Inf(-1))
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
	if _, err := Select(context.Background(), one, kde.Canonical, kde.BandwidthOptions{}); !errors.Is(err, data.ErrTooFew) {
		t.Errorf("one sample: %v", err)
	}
}
