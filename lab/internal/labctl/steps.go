package labctl

import (
	"context"
	"fmt"
	"time"
)

// step is one stage of bringing the lab up. A step with a lap ends a phase: its progress line
// says how long the phase took.
type step struct {
	name string
	run  func(context.Context) error
	lap  string
}

// runSteps runs steps in order and stops at the first that fails, its error naming the step
// ("step 'start kube-apiserver': kube-apiserver exited: ...") so that a failed bring-up says
// where it stopped.
func runSteps(ctx context.Context, steps []step, say func(string, ...any)) error {
	phase := time.Now()
	for _, s := range steps {
		if err := inStep(s.name, s.run(ctx)); err != nil {
			return err
		}
		if s.lap != "" {
			say("%-34s %5.1fs", s.lap, time.Since(phase).Seconds())
			phase = time.Now()
		}
	}
	return nil
}

// inStep wraps a step's error with the step's name; nil stays nil.
func inStep(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("step '%s': %w", name, err)
}
