package smooth

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/state"
)

// sumsKind is the kind of the JSON form of Sums.
var sumsKind = state.Kind{Name: "smooth.Sums", Version: 1}

// Sums is the mergeable form of ECE (relplot 1.0.3's convention): the
// smooth ECE reads the data only through the residuals r_i = f_i - y_i and
// the ones splatted on a grid of gridSize(sigma) points at each bandwidth
// sigma it computes, and splatting is a sum over the rows. The fixed
// point's bisection on [0, 1] visits sigma = 1 and multiples of 1/1024
// only, so the grids it can need are known in advance: 1,001 points for
// sigma >= 0.0107 and one more size for each of 2/1024 to 10/1024 (those
// below Eps are not computed); with Options.Sigma, that sigma's. Sums
// keeps them all: with the default Eps 20,762 points per channel, 332 KB
// for both, and ECE gives the in-memory value up to the order of the sums
// (1e-12 in the tests).
type Sums struct {
	st sumsState
}

// sumsState is the state of Sums, and its JSON form.
type sumsState struct {
	Version int     `json:"version"`
	Sigma   float64 `json:"sigma,omitempty"`
	Eps     float64 `json:"eps"`
	// Grids are the grid sizes, Res and Ones the residuals and the
	// weights splatted on each (weighted by w_i as given).
	Grids []int       `json:"grids"`
	Res   [][]float64 `json:"res"`
	Ones  [][]float64 `json:"ones"`
	// N counts the rows of positive weight, W sums the weights.
	N int64   `json:"n"`
	W float64 `json:"w"`
}

// NewSums returns empty sums for the smooth ECE of o (Convention Relplot:
// relplot 1.0.1's grid depends on the search's path and is not summed).
func NewSums(o Options) (*Sums, error) {
	switch {
	case o.Convention != Relplot:
		return nil, fmt.Errorf("%w: the summed smooth ECE is relplot's (1.0.2, 1.0.3), not %v", ErrInput, o.Convention)
	case !(o.Sigma == 0 || (o.Sigma >= MinSigma && o.Sigma <= 1)):
		return nil, fmt.Errorf("%w: sigma %v is not in [%g, 1]", ErrInput, o.Sigma, MinSigma)
	case !(o.Eps >= 0 && o.Eps < 1):
		return nil, fmt.Errorf("%w: eps %v is not in [0, 1)", ErrInput, o.Eps)
	}
	st := sumsState{Version: sumsKind.Version, Sigma: o.Sigma, Eps: o.Eps}
	if st.Eps == 0 {
		st.Eps = DefaultEps
	}
	st.Grids = searchGrids(st.Sigma, st.Eps)
	for _, g := range st.Grids {
		st.Res, st.Ones = append(st.Res, make([]float64, g)), append(st.Ones, make([]float64, g))
	}
	return &Sums{st: st}, nil
}

// searchGrids returns the grid sizes ECE computes at, in increasing
// order: at sigma, or at every bandwidth the fixed point's bisection can
// visit at or above eps.
func searchGrids(sigma, eps float64) []int {
	if sigma != 0 {
		return []int{gridSize(sigma)}
	}
	var out []int
	for k := 1; k <= 1024; k++ {
		if s := float64(k) / 1024; s >= eps {
			out = append(out, gridSize(s))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Add adds rows: scores f, outcomes y (both in [0, 1]) and weights w (nil:
// all 1; finite, >= 0, all zero in a batch allowed). Bad input is an error
// wrapping ErrInput (weights: mathx.ErrWeights) and adds nothing.
func (s *Sums) Add(f, y, w []float64) error {
	if len(y) != len(f) || (w != nil && len(w) != len(f)) {
		return fmt.Errorf("%w: %d scores, %d outcomes, %d weights", ErrInput, len(f), len(y), len(w))
	}
	if err := mathx.CheckWeightValues(w, len(f)); err != nil {
		return err
	}
	r := make([]float64, len(f))
	for i, fi := range f {
		if !(fi >= 0 && fi <= 1) {
			return fmt.Errorf("%w: score %d is %v, not in [0, 1]", ErrInput, i, fi)
		}
		if !(y[i] >= 0 && y[i] <= 1) {
			return fmt.Errorf("%w: outcome %d is %v, not in [0, 1]", ErrInput, i, y[i])
		}
		r[i] = fi - y[i]
	}
	for j := range s.st.Grids {
		splat(s.st.Res[j], f, r, w)
		splat(s.st.Ones[j], f, nil, w)
	}
	s.st.N += int64(mathx.PositiveRows(w, len(f)))
	s.st.W += mathx.WeightSum(w, len(f))
	return nil
}

// Merge adds another shard's sums of the same options.
func (s *Sums) Merge(o *Sums) error {
	if s.st.Sigma != o.st.Sigma || s.st.Eps != o.st.Eps || !slices.Equal(s.st.Grids, o.st.Grids) {
		return fmt.Errorf("%w: merging sums of sigma %v, eps %v with sigma %v, eps %v", ErrInput, s.st.Sigma, s.st.Eps, o.st.Sigma, o.st.Eps)
	}
	for j := range s.st.Grids {
		for i, v := range o.st.Res[j] {
			s.st.Res[j][i] += v
		}
		for i, v := range o.st.Ones[j] {
			s.st.Ones[j][i] += v
		}
	}
	s.st.N += o.st.N
	s.st.W += o.st.W
	return nil
}

// N returns the number of rows of positive weight added.
func (s *Sums) N() int64 { return s.st.N }

// Options returns the options of the sums (Eps set).
func (s *Sums) Options() Options { return Options{Sigma: s.st.Sigma, Eps: s.st.Eps} }

// ECE returns the smooth ECE of the rows added, as ECE of them in memory
// with the Sums' options: the weights are scaled to sum to the rows of
// positive weight, as there.
func (s *Sums) ECE(ctx context.Context) (Result, error) {
	if s.st.N == 0 || !(s.st.W > 0) {
		return Result{}, fmt.Errorf("%w: no points", ErrInput)
	}
	scale := float64(s.st.N) / s.st.W
	sm := &sample{n: int(s.st.N), grids: map[int][2][]float64{}}
	for j, g := range s.st.Grids {
		res, ones := slices.Clone(s.st.Res[j]), slices.Clone(s.st.Ones[j])
		for i := range res {
			res[i] *= scale
			ones[i] *= scale
		}
		sm.grids[g] = [2][]float64{res, ones}
	}
	r, err := sm.ece(ctx, Options{Sigma: s.st.Sigma, Eps: s.st.Eps})
	if err == nil && (math.IsNaN(r.Value) || math.IsInf(r.Value, 0)) {
		return Result{}, fmt.Errorf("%w: sums that give a smooth ECE of %v", ErrInput, r.Value)
	}
	return r, err
}

// MarshalJSON writes the JSON form.
func (s *Sums) MarshalJSON() ([]byte, error) { return sumsKind.Encode(&s.st) }

// UnmarshalJSON reads the JSON form, checking its version, grids and
// sums.
func (s *Sums) UnmarshalJSON(b []byte) error {
	var v sumsState
	if _, err := sumsKind.Decode(b, &v); err != nil {
		return err
	}
	if !(v.Sigma == 0 || (v.Sigma >= MinSigma && v.Sigma <= 1)) || !(v.Eps > 0 && v.Eps < 1) {
		return sumsKind.Errorf("sigma %v, eps %v", v.Sigma, v.Eps)
	}
	if want := searchGrids(v.Sigma, v.Eps); !slices.Equal(v.Grids, want) || len(v.Res) != len(want) || len(v.Ones) != len(want) {
		return sumsKind.Errorf("grids %v (%d and %d sums), want %v", v.Grids, len(v.Res), len(v.Ones), want)
	}
	if v.N < 0 || !(v.W >= 0) || math.IsInf(v.W, 0) || (v.N == 0) != (v.W == 0) {
		return sumsKind.Errorf("%d rows of weight %v", v.N, v.W)
	}
	// Each row's weight w splits over two points of every grid, and its
	// residual's share is at most the weight's: |Res| <= Ones, sum Ones =
	// W (up to rounding).
	for j, g := range v.Grids {
		if len(v.Res[j]) != g || len(v.Ones[j]) != g {
			return sumsKind.Errorf("grid %d of %d points holds %d and %d sums", j, g, len(v.Res[j]), len(v.Ones[j]))
		}
		sum := 0.0
		for i := range g {
			r, o := v.Res[j][i], v.Ones[j][i]
			if !(o >= 0) || math.IsInf(o, 0) || !(math.Abs(r) <= o*(1+1e-9)) {
				return sumsKind.Errorf("grid %d, point %d: residuals %v on weight %v", j, i, r, o)
			}
			sum += o
		}
		if math.Abs(sum-v.W) > 1e-9*v.W {
			return sumsKind.Errorf("grid %d holds weight %v of %v", j, sum, v.W)
		}
	}
	s.st = v
	return nil
}
