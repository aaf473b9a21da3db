package variational

import (
	"fmt"
	"strings"

	"github.com/calib-dev/calib/recal"
)

// Family is a recalibration family whose fitted maps the estimator uses:
// a name for the results, the recal method and its options.
type Family struct {
	Name   string
	Method recal.Method
	Fit    recal.FitOptions
	// MinRows is the fewest training rows (those outside a fold) the
	// family is fitted on: where a fold leaves fewer, the family is left
	// out of the cross-fit (no candidate). 0 means no minimum.
	MinRows int
}

// Shared is log-spline scaling without class biases (recal.LogSpline with
// LogSplineOptions.Shared): one map psi of the log-probability for every
// class.
const Shared = "log-spline-shared"

// Auto names the default choice among the families of AutoFamilies.
const Auto = "auto"

// FamilyOf returns the family named s: a recal method (its default
// options; spline, isotonic, histogram, platt and beta map the top-label
// confidence, as `calib fit` does) or "log-spline-shared".
func FamilyOf(s string) (Family, error) {
	s = strings.TrimSpace(s)
	if s == Shared {
		return Family{Name: Shared, Method: recal.MethodLogSpline, Fit: recal.FitOptions{LogSpline: recal.LogSplineOptions{Shared: true}}}, nil
	}
	m, err := recal.ParseMethod(s)
	if err != nil {
		return Family{}, fmt.Errorf("%w: family %q: not a recalibration method, %s or %s", ErrInput, s, Shared, Auto)
	}
	return Family{Name: string(m), Method: m}, nil
}

// AutoFamilies are the families "auto" chooses among: temperature scaling
// (1 parameter), log-spline scaling without class biases (9) and with
// them (K + 9), and boosted logit corrections (recal.Boost: trees on the
// log-probabilities, the class and the row's top class, as many as its
// early stop keeps). Each parametric one holds the one before it; the
// larger ones reach miscalibrations a temperature does not (label
// smoothing, a shift of the class priors) at the price of a noisier fit;
// boost reaches those no parametric map holds (a temperature that changes
// between regions of the simplex, one class's own distortion). Boost
// needs recal.BoostMinRows training rows (on fewer its map is a
// temperature, which the first family is): on fewer, auto is the three
// others.
func AutoFamilies() []Family {
	ts, _ := FamilyOf(string(recal.MethodTemperature))
	sh, _ := FamilyOf(Shared)
	ls, _ := FamilyOf(string(recal.MethodLogSpline))
	bo, _ := FamilyOf(string(recal.MethodBoost))
	bo.MinRows = recal.BoostMinRows
	return []Family{ts, sh, ls, bo}
}

// ParseFamilies returns the families of a comma-separated list of names
// (FamilyOf), "auto" standing for AutoFamilies; "" means auto.
func ParseFamilies(list string) ([]Family, error) {
	if strings.TrimSpace(list) == "" {
		return AutoFamilies(), nil
	}
	var out []Family
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == Auto {
			out = append(out, AutoFamilies()...)
			continue
		}
		f, err := FamilyOf(s)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	// A family named twice is fitted once.
	seen := map[string]bool{}
	uniq := out[:0]
	for _, f := range out {
		if !seen[f.Name] {
			seen[f.Name] = true
			uniq = append(uniq, f)
		}
	}
	return uniq, nil
}
