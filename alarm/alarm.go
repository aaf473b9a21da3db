// Package alarm raises a calibration alarm on a stream of labelled
// predictions, with a stated false-alarm guarantee, in two layers:
//
//   - Test: "is the model still calibrated?" A test martingale by betting
//     (Waudby-Smith and Ramdas 2023; for calibration, Arnold, Henzi and
//     Ziegel 2023): wealth W_t = prod_i (1 + lambda_i x_i) with x_i = o_i -
//     c_i, where o_i says whether the event happened and c_i is its
//     predicted probability. Under calibration E[x_i | c_i, past] = 0, so
//     W is a nonnegative martingale and by Ville's inequality
//     P(sup_t W_t >= 1/alpha) <= alpha: the alarm sounds at some time
//     with probability at most alpha if the model is calibrated.
//   - Change: "are the recent rows miscalibrated?" (a model that was
//     calibrated and no longer is: a change). A CUSUM e-detector (Shin, Ramdas
//     and Rinaldo 2022): M_t = (1 + lambda_t x_t) max(M_{t-1}, 1), alarm
//     at M_t >= ARL; under calibration E[M_tau] <= E[tau] for every
//     stopping time, so the average run length to a false alarm is at
//     least ARL rows.
//
// The bets lambda are predictable: each row's is fixed when the
// prediction is made, from the rows labelled before (Bet), so that a
// label arriving late is bet on with what was known then (the rule of
// Henzi and Ziegel 2022 for delayed outcomes: the bet never reads the
// outcome it multiplies). lambda depends on the bin of c among Bins
// equal-width bins, so that overconfidence at high c and underconfidence
// at low c do not cancel: lambda_b = mu_b / (sigma_b^2 + mu_b^2), the
// growth-optimal bet of aGRAPA from the bin's past x (since the start
// for the test; exponentially weighted, half-life HalfLife rows of the
// bin, for the detector), clipped to half the range that keeps 1 +
// lambda x > 0.
//
// The top-label event (o = [argmax f = y], c = max f) and, with
// ClassWise, each class's (o = [y = k], c = f_k) are bet on; the
// multiplicity is handled by averaging: the evidence of a layer is the
// mean of the top-label process and the mean over classes of the class
// processes (a mean of test martingales is one, a mean of e-detectors
// is one), so one threshold holds for all of them together.
package alarm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/pkgerr"
)

// Defaults of Options.
const (
	DefaultAlpha    = 0.01
	DefaultARL      = 100_000
	DefaultBins     = 10
	DefaultHalfLife = 500
)

// Options configures an Alarm. The zero value is a test at level 0.01, a
// detector of average run length 100,000 rows, 10 bins, top-label only.
type Options struct {
	// Alpha is the test's level: P(ever alarm | calibrated) <= Alpha.
	Alpha float64
	// ARL is the detector's average run length to a false alarm, in
	// labelled rows, under calibration (a lower bound).
	ARL float64
	// Bins are the equal-width bins of c whose bets are learnt apart.
	Bins int
	// HalfLife is the half-life, in rows of a bin, of the detector's
	// exponentially weighted estimates.
	HalfLife float64
	// ClassWise bets on every class's event too.
	ClassWise bool
}

// WithDefaults returns o with its zero fields set to their defaults
// (DefaultAlpha, DefaultARL, DefaultBins, DefaultHalfLife), checked: two
// Options configure the same alarm if and only if these are equal.
func (o Options) WithDefaults() (Options, error) { return o.withDefaults() }

func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.ARL == 0 {
		o.ARL = DefaultARL
	}
	if o.Bins == 0 {
		o.Bins = DefaultBins
	}
	if o.HalfLife == 0 {
		o.HalfLife = DefaultHalfLife
	}
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, pkgerr.FieldErrorf("alarm", "Alpha", "alpha %v: want a level in (0, 1)", o.Alpha)
	case !(o.ARL > 1) || math.IsInf(o.ARL, 0):
		return o, pkgerr.FieldErrorf("alarm", "ARL", "ARL %v: want a finite number of rows > 1", o.ARL)
	case o.Bins < 1 || o.Bins > 1000:
		return o, pkgerr.FieldErrorf("alarm", "Bins", "%d bins: want 1 to 1000", o.Bins)
	case !(o.HalfLife >= 1) || math.IsInf(o.HalfLife, 0):
		return o, pkgerr.FieldErrorf("alarm", "HalfLife", "half-life %v: want at least 1 row", o.HalfLife)
	}
	return o, nil
}

// Check checks o (the zero value is valid).
func (o Options) Check() error {
	_, err := o.withDefaults()
	return err
}

// process is the betting on one event (top-label, or one class): the
// bins' estimates and the wealth of both layers, in logs.
type process struct {
	// Since the start: the count, sum and sum of squares of x per bin.
	N, S, S2 []float64
	// Exponentially weighted mean and second moment of x per bin.
	M, M2 []float64
	// LogW is log W_t (the test); LogM is log M_t (the detector).
	LogW, LogM float64
}

func newProcess(bins int) *process {
	return &process{N: make([]float64, bins), S: make([]float64, bins), S2: make([]float64, bins), M: make([]float64, bins), M2: make([]float64, bins)}
}

// bin returns the bin of c in [0, 1].
func bin(c float64, bins int) int { return min(bins-1, max(0, int(c*float64(bins)))) }

// grapa returns mu / (sigma^2 + mu^2) = mean / second moment, clipped to
// half the range of bets that keep 1 + lambda x > 0 for x in [-c, 1-c].
func grapa(mean, second, c float64) float64 {
	if !(second > 0) {
		return 0
	}
	// 1 + lambda x > 0 for x in [-c, 1-c] when -1/(1-c) < lambda < 1/c
	// (c = 0 or 1 leave one side unbounded: +-Inf here).
	return min(0.5/c, max(-0.5/(1-c), mean/second))
}

// bets returns the bets of both layers on an event of probability c.
func (p *process) bets(c float64) (test, change float64) {
	b := bin(c, len(p.N))
	// The since-start estimates with a prior of one pseudo-row of x^2 =
	// 1/4, so that the first bets are small.
	test = grapa(p.S[b]/(p.N[b]+1), (p.S2[b]+0.25)/(p.N[b]+1), c)
	change = grapa(p.M[b], p.M2[b]+0.25/(1+p.N[b]), c)
	return test, change
}

// update multiplies in the outcome o (0 or 1) of an event of probability
// c with the bets fixed at prediction time, then learns from x.
func (p *process) update(c, o float64, test, change, decay float64) {
	x := o - c
	p.LogW += math.Log1p(test * x)
	p.LogM = math.Log1p(change*x) + max(p.LogM, 0)
	b := bin(c, len(p.N))
	p.N[b]++
	p.S[b] += x
	p.S2[b] += x * x
	p.M[b] += decay * (x - p.M[b])
	p.M2[b] += decay * (x*x - p.M2[b])
}

// Bet is a prediction's bets, fixed when it is made: the top-label
// event's, then each class's (with ClassWise), test then change.
type Bet []float64

// Alarm is the alarm of one stream (a model's slice). It is not safe for
// concurrent use.
type Alarm struct {
	o     Options
	decay float64
	k     int
	// Top is the top-label event's process; Class each class's (with
	// ClassWise).
	Top   *process
	Class []*process
	// Rows counts the labelled rows applied since the start (or reset).
	Rows int64
}

// New returns the alarm of a stream of predictions of k classes.
func New(k int, o Options) (*Alarm, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if k < 2 {
		return nil, errors.New("alarm: K < 2")
	}
	a := &Alarm{o: o, k: k, decay: 1 - math.Pow(0.5, 1/o.HalfLife)}
	a.Reset()
	return a, nil
}

// Reset starts both layers again (after an alarm was acted on: a new
// map, a retrained model).
func (a *Alarm) Reset() {
	a.Top = newProcess(a.o.Bins)
	a.Class = nil
	if a.o.ClassWise {
		a.Class = make([]*process, a.k)
		for i := range a.Class {
			a.Class[i] = newProcess(a.o.Bins)
		}
	}
	a.Rows = 0
}

// top returns the top label and its probability (ties: the lower class,
// as metric.TopR).
func top(p []float64) (int, float64) {
	j := mathx.Argmax(p)
	return j, p[j]
}

// Bet returns the bets on a prediction (K probabilities), from the rows
// labelled so far.
func (a *Alarm) Bet(p []float64) Bet {
	out := make(Bet, 0, 2+2*len(a.Class))
	_, c := top(p)
	t, ch := a.Top.bets(c)
	out = append(out, t, ch)
	for k, pr := range a.Class {
		t, ch := pr.bets(p[k])
		out = append(out, t, ch)
	}
	return out
}

// ValidBet reports whether bet is a bet of a's options on the prediction
// p: one per process, each finite and within the range that keeps every
// factor 1 + lambda x at 1/2 or more (what Bet gives).
func (a *Alarm) ValidBet(p []float64, bet Bet) bool {
	if len(bet) != 2+2*len(a.Class) || len(p) != a.k {
		return false
	}
	ok := func(l, c float64) bool { return l >= -0.5/(1-c) && l <= 0.5/c && !math.IsNaN(l) && !math.IsInf(l, 0) }
	_, c := top(p)
	if !ok(bet[0], c) || !ok(bet[1], c) {
		return false
	}
	for k := range a.Class {
		if !ok(bet[2+2*k], p[k]) || !ok(bet[3+2*k], p[k]) {
			return false
		}
	}
	return true
}

// Update applies the label y of a prediction p whose bets were bet (from
// Bet when the prediction was made; nil: made now, from the rows
// labelled so far, as for a label known at once).
func (a *Alarm) Update(p []float64, y int, bet Bet) {
	if bet != nil && len(bet) != 2+2*len(a.Class) {
		bet = nil // a bet of other options (unreachable in a monitor)
	}
	j, c := top(p)
	o := 0.0
	if j == y {
		o = 1
	}
	var t, ch float64
	if bet != nil {
		t, ch = bet[0], bet[1]
	} else {
		t, ch = a.Top.bets(c)
	}
	a.Top.update(c, o, t, ch, a.decay)
	for k, pr := range a.Class {
		o := 0.0
		if k == y {
			o = 1
		}
		if bet != nil {
			t, ch = bet[2+2*k], bet[3+2*k]
		} else {
			t, ch = pr.bets(p[k])
		}
		pr.update(p[k], o, t, ch, a.decay)
	}
	a.Rows++
}

// Evidence is an alarm's state: the log-evidence of each layer (the
// top-label and class-wise processes, and the layer's, their mean) and
// its threshold.
type Evidence struct {
	// Test: log W of the top-label process, log of the mean over classes
	// of the class processes' W (0 without ClassWise), and log of the
	// layer's evidence (the mean of the two, or the top-label's alone).
	TestTop, TestClass, Test float64
	// Change: the same for the detector's M.
	ChangeTop, ChangeClass, Change float64
	// TestThreshold is log(1/Alpha), ChangeThreshold log(ARL).
	TestThreshold, ChangeThreshold float64
	Rows                           int64
}

// TestAlarm and ChangeAlarm say whether a layer's evidence is at its
// threshold.
func (e Evidence) TestAlarm() bool   { return e.Test >= e.TestThreshold }
func (e Evidence) ChangeAlarm() bool { return e.Change >= e.ChangeThreshold }

// Evidence returns the alarm's state.
func (a *Alarm) Evidence() Evidence {
	e := Evidence{TestThreshold: math.Log(1 / a.o.Alpha), ChangeThreshold: math.Log(a.o.ARL), Rows: a.Rows}
	e.TestTop, e.ChangeTop = a.Top.LogW, a.Top.LogM
	e.Test, e.Change = e.TestTop, e.ChangeTop
	if len(a.Class) > 0 {
		w := make([]float64, len(a.Class))
		m := make([]float64, len(a.Class))
		for k, p := range a.Class {
			w[k], m[k] = p.LogW, p.LogM
		}
		e.TestClass, e.ChangeClass = logMean(w), logMean(m)
		e.Test = logMean([]float64{e.TestTop, e.TestClass})
		e.Change = logMean([]float64{e.ChangeTop, e.ChangeClass})
	}
	return e
}

// logMean returns log(mean(exp(v))).
func logMean(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s/float64(len(v)))
}

// MarshalJSON writes the alarm's state (its options are the caller's).
func (a *Alarm) MarshalJSON() ([]byte, error) {
	return json.Marshal(alarmJSON{Top: a.Top, Class: a.Class, Rows: a.Rows})
}

type alarmJSON struct {
	Top   *process   `json:"top"`
	Class []*process `json:"class,omitempty"`
	Rows  int64      `json:"rows"`
}

// UnmarshalJSON reads a state MarshalJSON wrote into an alarm built by
// New with the options of the one that wrote it (the shapes are checked).
func (a *Alarm) UnmarshalJSON(b []byte) error {
	var v alarmJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("alarm: %w", err)
	}
	ok := func(p *process) bool {
		n := a.o.Bins
		return p != nil && len(p.N) == n && len(p.S) == n && len(p.S2) == n && len(p.M) == n && len(p.M2) == n &&
			!math.IsNaN(p.LogW) && !math.IsNaN(p.LogM) && !math.IsInf(p.LogW, 0) && !math.IsInf(p.LogM, 0)
	}
	if !ok(v.Top) || len(v.Class) != len(a.Class) || v.Rows < 0 {
		return errors.New("alarm: a state of other options (bins, class-wise) or damaged")
	}
	for _, p := range v.Class {
		if !ok(p) {
			return errors.New("alarm: a state of other options (bins) or damaged")
		}
	}
	a.Top, a.Class, a.Rows = v.Top, v.Class, v.Rows
	return nil
}
