package experiment

import (
	"context"
	"encoding/json"
	"testing"
)

// TestAlarmDeterministic: the alarm study gives the same rows for any
// number of workers; at temperature 2 without label delay every detector
// finds the shift in every run; the windowed ECE's threshold is a
// calibration error (0 to 1).
func TestAlarmDeterministic(t *testing.T) {
	o := AlarmOptions{NullRuns: 8, NullRows: 2000, ARLRuns: 4, DelayRuns: 3, Seed: 5}
	var docs []string
	var last *AlarmResult
	for _, w := range []int{1, 3} {
		o.Workers = w
		r, err := Alarm(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		docs = append(docs, string(b))
		last = r
	}
	if docs[0] != docs[1] {
		t.Fatal("the rows depend on the number of workers")
	}
	if !(last.ECEThreshold > 0 && last.ECEThreshold < 1) || len(last.Null) != 6 || len(last.ARL) != 2 || len(last.Delays) != 4*3*4 {
		t.Fatalf("result: threshold %v, %d null rows, %d ARL rows, %d delay rows", last.ECEThreshold, len(last.Null), len(last.ARL), len(last.Delays))
	}
	for _, d := range last.Delays {
		if d.Shift == "temperature 2" && d.Delay == 0 && d.Detector != detECE && d.Missed+d.Early != 0 {
			t.Errorf("%+v: missed or early", d)
		}
	}
}
