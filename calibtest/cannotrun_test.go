package calibtest

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTestsThatCannotRun: on one-hot predictions the tests whose null has
// no variance (ks, kuiper, spiegelhalter, prior_score) each report why in
// their own entry (p-value null in JSON) and the others run; the answer
// names those that could not.
func TestTestsThatCannotRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	n, k := 300, 3
	p, y := make([]float64, n*k), make([]int, n)
	for i := range n {
		c := rng.IntN(k)
		p[i*k+c] = 1
		y[i] = c
		if rng.Float64() < 0.2 {
			y[i] = rng.IntN(k)
		}
	}
	r, err := Run(context.Background(), p, y, k, nil, Options{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	ran, failed := 0, 0
	for _, x := range r.Tests {
		switch {
		case x.Error != "":
			failed++
			if !strings.Contains(x.Error, "no variance under the null") || strings.Contains(x.Error, "calibtest:") {
				t.Errorf("%s %s: error %q", x.Test, x.Notion, x.Error)
			}
		case x.Test == "ece_bin":
			ran++
		}
	}
	if failed != 7 || ran == 0 || !strings.Contains(r.Answer, "could not run on this data") {
		t.Errorf("%d could not run, %d ece_bin ran; answer %q", failed, ran, r.Answer)
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests []struct {
			PValue *float64 `json:"p_value"`
			Error  string   `json:"error"`
		} `json:"tests"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, x := range doc.Tests {
		if (x.Error != "") != (x.PValue == nil) {
			t.Errorf("error %q with p-value %v", x.Error, x.PValue)
		}
	}
}
