package state

import (
	"errors"
	"strings"
	"testing"
)

type thing struct {
	Version int `json:"version"`
	X       int `json:"x"`
}

// TestEnvelope: Encode writes the kind first; Decode reads its own kind,
// a form without a kind, every version from Oldest to Version, and refuses
// another kind, a newer or older version, a missing version and bad JSON,
// each error an *Error naming the kind.
func TestEnvelope(t *testing.T) {
	k := Kind{Name: "pkg.Thing", Version: 3, Oldest: 2}
	b, err := k.Encode(&thing{Version: 3, X: 7})
	if err != nil || string(b) != `{"kind":"pkg.Thing","version":3,"x":7}` {
		t.Fatalf("Encode: %s, %v", b, err)
	}
	for _, doc := range []string{string(b), `{"version":2,"x":7}`} {
		var v thing
		if ver, err := k.Decode([]byte(doc), &v); err != nil || v.X != 7 || ver != v.Version {
			t.Errorf("Decode %s: %+v, %d, %v", doc, v, ver, err)
		}
	}
	for doc, want := range map[string]string{
		`{"kind":"pkg.Other","version":3}`: `pkg.Thing: the state is a "pkg.Other", not a pkg.Thing`,
		`{"kind":"pkg.Thing","version":4}`: "pkg.Thing: version 4, newer than this calib reads (2 to 3): written by a newer calib",
		`{"version":1}`:                    "pkg.Thing: version 1, older than this calib reads (2 to 3)",
		`{"x":1}`:                          "pkg.Thing: no version: not the JSON form of a state",
		`{"version":3,"x":"a"}`:            "pkg.Thing: json: cannot unmarshal",
		`[1]`:                              "pkg.Thing: json: cannot unmarshal array",
	} {
		var v thing
		_, err := k.Decode([]byte(doc), &v)
		var se *Error
		if !errors.As(err, &se) || se.Kind != "pkg.Thing" || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Decode %s: %v, want %q", doc, err, want)
		}
	}
	bare := Kind{Name: "pkg.Old", Version: 2, Oldest: 1, Bare: 1}
	var v thing
	if ver, err := bare.Decode([]byte(`{"x":5}`), &v); err != nil || ver != 1 || v.X != 5 {
		t.Errorf("bare form: %d, %+v, %v", ver, v, err)
	}
	if b, err := k.Encode(struct{}{}); err != nil || string(b) != `{"kind":"pkg.Thing"}` {
		t.Errorf("empty: %s, %v", b, err)
	}
	if _, err := k.Encode(3); err == nil {
		t.Error("a number encoded as a state")
	}
}
