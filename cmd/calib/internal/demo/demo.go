// Package demo embeds one real prediction set for `calib demo`, examples and
// benchmarks: the validation and test logits of a ResNet-110 trained on
// CIFAR-10 with the Brier score (from the focal_calibration models via
// AIgen/df-posthoc-calibration; provenance and checksums in
// cifar10_resnet110-brier/README.md).
package demo

import (
	"embed"
	"fmt"

	"github.com/calib-dev/calib/data"
)

// Name is the name of the embedded set.
const Name = "cifar10_resnet110-brier"

// Classes are the CIFAR-10 class names, by label.
var Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

//go:embed cifar10_resnet110-brier/*.npy
var files embed.FS

// Load returns the "val" (5,000 rows) or "test" (10,000 rows) split as a
// validated prediction set (softmax of the float32 logits, in float64).
func Load(split string) (*data.Set, error) {
	if split != "val" && split != "test" {
		return nil, fmt.Errorf("demo: unknown split %q (valid: val, test)", split)
	}
	preds, err := files.ReadFile(Name + "/" + split + "_logits.npy")
	if err != nil {
		return nil, err
	}
	labels, err := files.ReadFile(Name + "/" + split + "_labels.npy")
	if err != nil {
		return nil, err
	}
	return data.Parse(Name+"/"+split+"_logits.npy", preds, Name+"/"+split+"_labels.npy", labels, data.Options{Logits: true})
}

// Sets returns the test and validation splits (Load).
func Sets() (test, val *data.Set, err error) {
	if test, err = Load("test"); err != nil {
		return nil, nil, err
	}
	if val, err = Load("val"); err != nil {
		return nil, nil, err
	}
	return test, val, nil
}
