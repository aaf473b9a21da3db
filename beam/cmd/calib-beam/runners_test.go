package main

import (
	"context"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// TestRegisteredRunners: every name of registeredRunners is one Beam has
// registered (registering it again panics), and a name outside it is not.
func TestRegisteredRunners(t *testing.T) {
	run := func(context.Context, *beam.Pipeline) (beam.PipelineResult, error) { return nil, nil }
	registered := func(name string) (ok bool) {
		defer func() { ok = recover() != nil }()
		beam.RegisterRunner(name, run)
		return false
	}
	for _, name := range registeredRunners {
		if !registered(name) {
			t.Errorf("%s: not registered by Beam", name)
		}
		if knownRunner(name) != nil {
			t.Errorf("%s refused", name)
		}
	}
	if registered("calib-test-no-such-runner") || knownRunner("calib-test-no-such-runner") == nil {
		t.Error("an unknown runner passes")
	}
}
