package tabular

import "testing"

// TestLoad parses every embedded set and checks its documented shape and
// class counts (README.md).
func TestLoad(t *testing.T) {
	want := map[string][3]int{"vehicle": {846, 18, 4}, "dna": {3186, 180, 3}, "satellite": {6435, 36, 6},
		"letter": {20000, 16, 26}, "shuttle": {58000, 9, 7}}
	for _, name := range setNames {
		tb, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		w := want[name]
		if tb.N != w[0] || tb.D != w[1] || tb.K != w[2] {
			t.Errorf("%s: n %d, d %d, K %d; want %v", name, tb.N, tb.D, tb.K, w)
		}
		lo, hi := tb.N, 0
		for _, c := range tb.Counts {
			lo, hi = min(lo, c), max(hi, c)
		}
		t.Logf("%s: class counts %v", name, tb.Counts)
		if name == "shuttle" && (lo != 10 || hi != 45586) {
			t.Errorf("shuttle: class counts %v, want 10 to 45586", tb.Counts)
		}
	}
	if _, err := Load("iris"); err == nil {
		t.Error("Load(iris) succeeded")
	}
}
