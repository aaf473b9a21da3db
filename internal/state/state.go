// Package state is the one envelope of calib's mergeable states (the sums
// of metric, kde and evaluate that shards add up: Add a batch, Merge
// another shard's state, write it as JSON between processes). Every
// state's JSON form is an object whose first keys are
//
//	{"kind": "metric.BinSums", "version": 1, ...}
//
// the kind naming the Go type that wrote it and the version its form. One
// function decodes every kind (Decode), and its errors have one shape,
// "KIND: what is wrong" (Error).
//
// The promise, as hash.Hash makes it for its encodings: a released version
// of calib decodes the state that any earlier released version wrote,
// from the first version of each kind's form it names (Kind.Oldest); a
// newer form than the reader knows is refused, saying so. A state written
// before kinds were recorded (no "kind" key) is read as the kind asked
// for.
package state

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Kind is a kind of state and the versions of its form that this calib
// reads.
type Kind struct {
	Name    string // the Go type, as "metric.BinSums"
	Version int    // the version this calib writes
	Oldest  int    // the oldest version it reads (0 means Version)
	// Bare is the version a form without a "version" key is read as: the
	// form of a state written before it had one (0: such a form is
	// refused).
	Bare int
}

// Error is an error decoding or checking a state of kind Kind.
type Error struct {
	Kind string
	Err  error
}

func (e *Error) Error() string { return e.Kind + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error of kind k with the formatted text.
func (k Kind) Errorf(format string, args ...any) error {
	return &Error{Kind: k.Name, Err: fmt.Errorf(format, args...)}
}

// Encode returns the JSON form of v (a struct, or a pointer to one, whose
// fields include "version") with the key "kind" first.
func (k Kind) Encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Kind: k.Name, Err: err}
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, k.Errorf("the JSON form is not an object")
	}
	head, _ := json.Marshal(k.Name)
	out := make([]byte, 0, len(b)+len(head)+10)
	out = append(out, `{"kind":`...)
	out = append(out, head...)
	if !bytes.Equal(b, []byte("{}")) {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// Decode checks the envelope of b, a JSON form of a state of kind k, then
// decodes b into v: a "kind" other than k's name is refused (none is read
// as k), and a "version" outside Oldest..Version. It returns the version
// read.
func (k Kind) Decode(b []byte, v any) (int, error) {
	var h struct {
		Kind    *string `json:"kind"`
		Version *int    `json:"version"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return 0, &Error{Kind: k.Name, Err: err}
	}
	oldest := k.Oldest
	if oldest == 0 {
		oldest = k.Version
	}
	switch {
	case h.Kind != nil && *h.Kind != k.Name:
		return 0, k.Errorf("the state is a %q, not a %s", *h.Kind, k.Name)
	case h.Version == nil && k.Bare == 0:
		return 0, k.Errorf("no version: not the JSON form of a state")
	case h.Version == nil:
		h.Version = &k.Bare
	case *h.Version > k.Version:
		return 0, k.Errorf("version %d, newer than this calib reads (%d to %d): written by a newer calib", *h.Version, oldest, k.Version)
	case *h.Version < oldest:
		return 0, k.Errorf("version %d, older than this calib reads (%d to %d)", *h.Version, oldest, k.Version)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return 0, &Error{Kind: k.Name, Err: err}
	}
	return *h.Version, nil
}
