package experiment

import (
	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/testenv"
)

// demoSet loads a split ("val" or "test") of the real set that calib demo
// embeds, from its files (testenv.DemoFiles).
func demoSet(split string) (*data.Set, error) {
	logits, labels := testenv.DemoFiles(split)
	return data.Load(logits, data.Options{Labels: labels, Logits: true})
}
