package goldenjson

import "testing"

func TestDiff(t *testing.T) {
	want, _ := Decode([]byte(`{"a": 1, "seconds": 3, "r": [{"v": 0.5, "seconds": 1}]}`))
	got, _ := Decode([]byte(`{"a": 1, "seconds": 9, "r": [{"v": 0.5, "new": true}]}`))
	if d := Diff("", want, got, true); len(d) != 0 {
		t.Errorf("subset: %v", d)
	}
	if d := Diff("", want, got, false); len(d) != 1 || d[0] != ".r[0].new: not in the golden file" {
		t.Errorf("exact: %v", d)
	}
	other, _ := Decode([]byte(`{"a": 2, "r": [{"v": 0.25}]}`))
	if d := Diff("", want, other, true); len(d) != 2 {
		t.Errorf("values: %v", d)
	}
}

func TestDiffWithin(t *testing.T) {
	want, _ := Decode([]byte(`{"v": 1, "r": [0.5, "x"]}`))
	near, _ := Decode([]byte(`{"v": 1.0000000000001, "r": [0.5, "x"]}`))
	far, _ := Decode([]byte(`{"v": 1.001, "r": [0.5, "x"]}`))
	if d := DiffWithin("", want, near, 1e-12); d != nil {
		t.Errorf("within 1e-13: %v", d)
	}
	if d := DiffWithin("", want, far, 1e-12); len(d) != 1 || d[0] != ".v: got 1.001, want 1" {
		t.Errorf("1e-3 apart: %v", d)
	}
	if d := DiffWithin("", want, near, 0); len(d) != 1 {
		t.Errorf("rel 0 is exact: %v", d)
	}
}
