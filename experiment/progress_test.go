package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/synth"
)

// recorder is a progress.Reporter that records the phases and the last
// amounts.
type recorder struct {
	mu          sync.Mutex
	phases      []string
	steps       []string
	done, total int64
	ended       int
}

func (r *recorder) Phase(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, fmt.Sprintf(format, args...))
}

func (r *recorder) Step(name string) (progress.Func, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, name)
	return func(done, total int64) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.done, r.total = done, total
		}, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ended++
		}
}

// TestExperimentProgress: an experiment tells its Reporter one step, each
// finished part (the phase names it, the count reaches the number of
// parts) and ends the step.
func TestExperimentProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	probs := synth.UniformSimplex(make([]float64, 300*3), 3, rng)
	labels := synth.Labels(nil, probs, 3, rng)
	sets := []RealSet{{Name: "a", Probs: probs, Labels: labels, K: 3}, {Name: "b", Probs: probs, Labels: labels, K: 3}}
	var r recorder
	if _, err := RealWitness(context.Background(), sets, RealWitnessOptions{Quick: true, Seed: 1, Progress: &r}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.steps, []string{"real witness"}) || !slices.Equal(r.phases, []string{"a", "b"}) || r.done != 2 || r.total != 2 || r.ended != 1 {
		t.Errorf("steps %q, phases %q, %d/%d, ended %d; want one step, phases a b, 2/2, ended once", r.steps, r.phases, r.done, r.total, r.ended)
	}
}
