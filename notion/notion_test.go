package notion

import (
	"encoding/json"
	"testing"
)

// TestSpellings: each notion reads back from its name under the one parse
// rule; the earlier spellings read as today's; unknown names are refused;
// a JSON document that spells a notion the earlier way decodes to today's
// spelling.
func TestSpellings(t *testing.T) {
	for _, n := range allNotions {
		for _, s := range []string{string(n), " " + string(n) + " ", "CLASS-WISE"} {
			if s == "CLASS-WISE" && n != ClassWise {
				continue
			}
			if got, err := Parse(s); err != nil || got != n {
				t.Errorf("Parse(%q) = %q, %v; want %q", s, got, err, n)
			}
		}
	}
	for s, want := range map[string]Notion{"marginal": ClassWise, "Marginal": ClassWise, "toplabel": TopLabel, "top-label": TopLabel, "": None} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", s, got, err, want)
		}
	}
	if _, err := Parse("sideways"); err == nil {
		t.Error("unknown notion accepted")
	}
	var v struct{ Notion Notion }
	if err := json.Unmarshal([]byte(`{"Notion":"marginal"}`), &v); err != nil || v.Notion != ClassWise {
		t.Errorf("earlier document: %q, %v", v.Notion, err)
	}
	if b, _ := json.Marshal(v); string(b) != `{"Notion":"class_wise"}` {
		t.Errorf("written %s", b)
	}
}
