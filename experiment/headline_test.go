package experiment

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHeadlineQuick: the quick grid (K = 10, n = 1,000, split and
// calibrated, 4 data sets) gives a row per cell whose counts add up, the
// split's truth (about 0.20) and a calibrated truth of 0; an unknown
// miscalibration is refused by name.
func TestHeadlineQuick(t *testing.T) {
	r, err := Headline(context.Background(), HeadlineOptions{Quick: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(r.Rows))
	}
	for _, x := range r.Rows {
		if x.Reps != 4 || x.Failed != 0 || x.Covered > x.Reps || x.ExcludesZero > x.Reps || !(x.Ratio[0] <= x.Ratio[1] && x.Ratio[1] <= x.Ratio[2]) {
			t.Errorf("row %+v", x)
		}
	}
	if sp, cal := r.Rows[0], r.Rows[1]; sp.Family != "split" || sp.Truth < 0.18 || sp.Truth > 0.22 || cal.Family != "calibrated" || cal.Truth != 0 {
		t.Errorf("rows %+v, %+v", sp, cal)
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil || !strings.Contains(b.String(), "split 0.7") {
		t.Errorf("table %q, %v", b.String(), err)
	}
	if _, err := Headline(context.Background(), HeadlineOptions{Misc: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown miscalibration: %v", err)
	}
}
