package experiment

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/calib-dev/calib/alarm"
	"github.com/calib-dev/calib/internal/mathx"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
)

// AlarmOptions configures Alarm. The zero value is the full study.
type AlarmOptions struct {
	// K is the number of classes (0: 10).
	K int
	// NullRuns calibrated streams of NullRows rows measure the test's
	// false-alarm rate (0: 1000 and 20,000; 100 and 5,000 with Quick);
	// ARLRuns streams measure the detector's run length to a false alarm
	// at ARL targets 1,000 and 10,000 (0: 200; 20 with Quick), each
	// stopped at 10 times the larger target; DelayRuns streams per shift
	// and label delay measure the detection delay (0: 100; 10 with
	// Quick).
	NullRuns, NullRows, ARLRuns, DelayRuns int
	Quick                                  bool
	Seed                                   uint64
	Workers                                int
	Progress                               progress.Reporter
}

// The study's fixed design.
const (
	alarmChangeAt  = 5000   // calibrated rows before the shift
	alarmAfter     = 50_000 // rows watched after the shift
	alarmARL       = 10_000 // the detectors' ARL in the delay study
	alarmECEWindow = 2000   // rows of the windowed ECE
	alarmECEEvery  = 100    // rows between its checks
	alarmECEBins   = 15
)

// alarmShift is a change of the labels' distribution: q from the
// model's probabilities p and logits z.
type alarmShift struct {
	Name string
	q    func(p, z []float64) []float64
}

func temperatureShift(t float64) alarmShift {
	return alarmShift{Name: fmt.Sprintf("temperature %g", t), q: func(_, z []float64) []float64 { return mathx.TemperedSoftmax(z, t) }}
}

// priorShift makes class 0 three times as likely (the labels' prior
// moves; the model's probabilities do not).
var priorShift = alarmShift{Name: "prior (class 0 x3)", q: func(p, _ []float64) []float64 {
	q := slices.Clone(p)
	q[0] *= 3
	s := 0.0
	for _, v := range q {
		s += v
	}
	for i := range q {
		q[i] /= s
	}
	return q
}}

// drawClass returns a class drawn from q.
func drawClass(rng *rand.Rand, q []float64) int {
	u := rng.Float64()
	for j, v := range q {
		if u -= v; u <= 0 {
			return j
		}
	}
	return len(q) - 1
}

// alarmStream yields predictions (logits 2.5 N(0, 1) per class, the
// model's probabilities their softmax) and labels drawn from them, or
// from the shift's q from row change on.
type alarmStream struct {
	rng    *rand.Rand
	k      int
	shift  *alarmShift
	change int
	i      int
}

// next returns a prediction, the shift's distribution of its label (nil
// without a shift; the labels follow it from row change on) and its
// label.
func (s *alarmStream) next() (p, shifted []float64, y int) {
	z := make([]float64, s.k)
	for j := range z {
		z[j] = 2.5 * s.rng.NormFloat64()
	}
	p = mathx.TemperedSoftmax(z, 1)
	q := p
	if s.shift != nil {
		shifted = s.shift.q(p, z)
		if s.i >= s.change {
			q = shifted
		}
	}
	s.i++
	return p, shifted, drawClass(s.rng, q)
}

// AlarmNullRow is the test's false-alarm rate at one label delay.
type AlarmNullRow struct {
	Delay int     `json:"delay"`
	Alpha float64 `json:"alpha"`
	Runs  int     `json:"runs"`
	Rows  int     `json:"rows"`
	// Alarms counts the runs whose test ever reached 1/alpha; Rate is
	// Alarms/Runs and Upper its one-sided 95 % upper bound (Wilson).
	Alarms int     `json:"alarms"`
	Rate   float64 `json:"rate"`
	Upper  float64 `json:"upper"`
}

// AlarmARLRow is the detector's run length to a false alarm.
type AlarmARLRow struct {
	Target float64 `json:"target"`
	Runs   int     `json:"runs"`
	// Mean and Median of the run lengths (censored at Cap: a lower bound
	// of the mean), Censored the runs without a false alarm by Cap.
	Mean     float64 `json:"mean"`
	Median   float64 `json:"median"`
	Censored int     `json:"censored"`
	Cap      int     `json:"cap"`
}

// AlarmDelayRow is a detector's delay after a shift at one label delay.
type AlarmDelayRow struct {
	Shift    string `json:"shift"`
	Delay    int    `json:"delay"`
	Detector string `json:"detector"`
	Runs     int    `json:"runs"`
	// Early counts the runs that alarmed before the shift (false
	// alarms); Missed those without an alarm within alarmAfter rows of
	// it. Median and Mean are over the runs detected after the shift, in
	// rows from the shift to the alarm (the delay of the labels
	// included).
	Early  int     `json:"early"`
	Missed int     `json:"missed"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
}

// AlarmResult is the outcome of Alarm.
type AlarmResult struct {
	K            int             `json:"k"`
	ECEThreshold float64         `json:"ece_threshold"`
	Null         []AlarmNullRow  `json:"null"`
	ARL          []AlarmARLRow   `json:"arl"`
	Delays       []AlarmDelayRow `json:"delays"`
	Quick        bool            `json:"quick"`
	Seed         uint64          `json:"seed"`
}

// The detectors of the delay study.
const (
	detChange = "calib change (e-detector)"
	detTest   = "calib test (alpha 0.01)"
	detOracle = "likelihood-ratio CUSUM, shift known"
	detECE    = "windowed ECE threshold"
)

var alarmDetectors = []string{detChange, detTest, detOracle, detECE}

// Alarm measures calib serve's calibration alarm (package alarm,
// top-label and class-wise) on simulated streams: the test's false-alarm
// rate on calibrated streams at alpha = 0.01 and 0.05 with labels delayed
// by 0, 100 and 10,000 rows; the detector's average run length to a false
// alarm at ARL targets 1,000 and 10,000; and the delay to detect a
// temperature shift (T = 1.1, 1.3, 2) or a prior shift after 5,000
// calibrated rows, beside the likelihood-ratio CUSUM that knows the
// post-shift distribution (the optimal detector at the same ARL bound)
// and a windowed-ECE threshold rule set by simulation to the same ARL.
func Alarm(ctx context.Context, o AlarmOptions) (*AlarmResult, error) {
	if o.K == 0 {
		o.K = 10
	}
	def := func(v *int, full, quick int) {
		if *v == 0 {
			*v = full
			if o.Quick {
				*v = quick
			}
		}
	}
	def(&o.NullRuns, 1000, 100)
	def(&o.NullRows, 20_000, 5000)
	def(&o.ARLRuns, 200, 10)
	def(&o.DelayRuns, 100, 10)
	if o.K < 2 || o.NullRuns < 1 || o.NullRows < 1 || o.ARLRuns < 1 || o.DelayRuns < 1 {
		return nil, fmt.Errorf("experiment: alarm: K = %d, runs %d, %d, %d", o.K, o.NullRuns, o.ARLRuns, o.DelayRuns)
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	res := &AlarmResult{K: o.K, Quick: o.Quick, Seed: o.Seed}
	delays := []int{0, 100, 10_000}
	alphas := []float64{0.01, 0.05}
	opts := alarm.Options{ClassWise: true, ARL: alarmARL}

	// The test's false alarms: the largest log-evidence of each run.
	for di, d := range delays {
		maxes, err := parallelRuns(ctx, o.Workers, o.NullRuns, func(run int) float64 {
			rng := rand.New(rand.NewPCG(o.Seed, uint64(1_000_000+di*100_000+run)))
			a, _ := alarm.New(o.K, opts)
			st := &alarmStream{rng: rng, k: o.K}
			best := math.Inf(-1)
			feed(st, a, d, o.NullRows, func(e alarm.Evidence, _ int) bool {
				best = max(best, e.Test)
				return false
			})
			return best
		})
		if err != nil {
			return nil, err
		}
		for _, alpha := range alphas {
			n := 0
			for _, m := range maxes {
				if m >= math.Log(1/alpha) {
					n++
				}
			}
			res.Null = append(res.Null, AlarmNullRow{Delay: d, Alpha: alpha, Runs: o.NullRuns, Rows: o.NullRows, Alarms: n,
				Rate: float64(n) / float64(o.NullRuns), Upper: wilsonUpper(n, o.NullRuns)})
		}
	}

	// The detector's run length: the first row whose log-evidence
	// reaches log(target), for both targets in one run.
	targets := []float64{1000, 10_000}
	limit := int(10 * targets[len(targets)-1])
	firsts, err := parallelRuns(ctx, o.Workers, o.ARLRuns, func(run int) []int {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(2_000_000+run)))
		a, _ := alarm.New(o.K, opts)
		st := &alarmStream{rng: rng, k: o.K}
		first := []int{limit, limit}
		feed(st, a, 0, limit, func(e alarm.Evidence, t int) bool {
			for i, tg := range targets {
				if first[i] == limit && e.Change >= math.Log(tg) {
					first[i] = t + 1
				}
			}
			return first[len(first)-1] < limit
		})
		return first
	})
	if err != nil {
		return nil, err
	}
	for i, tg := range targets {
		var lens []float64
		cens := 0
		for _, f := range firsts {
			lens = append(lens, float64(f[i]))
			if f[i] == limit {
				cens++
			}
		}
		res.ARL = append(res.ARL, AlarmARLRow{Target: tg, Runs: o.ARLRuns, Mean: mean(lens), Median: median(lens), Censored: cens, Cap: limit})
	}

	// The windowed ECE's threshold for an ARL of alarmARL rows.
	thr, err := eceThreshold(ctx, o)
	if err != nil {
		return nil, err
	}
	res.ECEThreshold = thr

	// The delays.
	shifts := []alarmShift{temperatureShift(1.1), temperatureShift(1.3), temperatureShift(2), priorShift}
	for si, sh := range shifts {
		for di, d := range delays {
			found, err := parallelRuns(ctx, o.Workers, o.DelayRuns, func(run int) []int {
				rng := rand.New(rand.NewPCG(o.Seed, uint64(3_000_000+si*100_000+di*10_000+run)))
				return delayRun(rng, o.K, sh, d, thr, opts)
			})
			if err != nil {
				return nil, err
			}
			for j, det := range alarmDetectors {
				row := AlarmDelayRow{Shift: sh.Name, Delay: d, Detector: det, Runs: o.DelayRuns}
				var ds []float64
				for _, f := range found {
					switch {
					case f[j] < 0:
						row.Missed++
					case f[j] < alarmChangeAt:
						row.Early++
					default:
						ds = append(ds, float64(f[j]-alarmChangeAt))
					}
				}
				row.Median, row.Mean = median(ds), mean(ds)
				res.Delays = append(res.Delays, row)
			}
		}
	}
	return res, nil
}

// feed runs a stream through an alarm for n predictions, labels arriving
// delay predictions later; after each label, check(evidence, the
// prediction index of the time) may stop it.
func feed(st *alarmStream, a *alarm.Alarm, delay, n int, check func(alarm.Evidence, int) bool) {
	type made struct {
		p   []float64
		y   int
		bet alarm.Bet
	}
	queue := make([]made, 0, delay+1)
	for t := range n {
		p, _, y := st.next()
		queue = append(queue, made{p, y, a.Bet(p)})
		if len(queue) > delay {
			m := queue[0]
			queue = queue[1:]
			a.Update(m.p, m.y, m.bet)
			if check(a.Evidence(), t) {
				return
			}
		}
	}
}

// delayRun returns, per detector of alarmDetectors, the prediction index
// at which it first alarmed (-1: never within alarmAfter rows of the
// shift).
func delayRun(rng *rand.Rand, k int, sh alarmShift, delay int, eceThr float64, opts alarm.Options) []int {
	st := &alarmStream{rng: rng, k: k, shift: &sh, change: alarmChangeAt}
	a, _ := alarm.New(k, opts)
	found := []int{-1, -1, -1, -1}
	type made struct {
		p, q []float64
		y    int
		bet  alarm.Bet
	}
	var queue []made
	logLR := 0.0 // the oracle's CUSUM, in logs
	ece := newWindowECE(alarmECEWindow, alarmECEBins)
	labelled := 0
	for t := range alarmChangeAt + alarmAfter {
		p, q, y := st.next()
		queue = append(queue, made{p, q, y, a.Bet(p)})
		if len(queue) <= delay {
			continue
		}
		m := queue[0]
		queue = queue[1:]
		a.Update(m.p, m.y, m.bet)
		e := a.Evidence()
		if found[0] < 0 && e.Change >= e.ChangeThreshold {
			found[0] = t
		}
		if found[1] < 0 && e.Test >= e.TestThreshold {
			found[1] = t
		}
		// The oracle's e-value: the likelihood of the label after the
		// shift over the model's, for every row (its CUSUM restarts
		// from 1 whenever it falls below).
		logLR = math.Log(m.q[m.y]/m.p[m.y]) + max(logLR, 0)
		if found[2] < 0 && logLR >= math.Log(alarmARL) {
			found[2] = t
		}
		labelled++
		ece.add(m.p, m.y)
		if found[3] < 0 && labelled >= alarmECEWindow && labelled%alarmECEEvery == 0 && ece.value() >= eceThr {
			found[3] = t
		}
	}
	return found
}

// windowECE is the top-label binned ECE of the last w rows.
type windowECE struct {
	w, b          int
	conf, correct []float64
	n             []int
	ringC, ringO  []float64
	ringB         []int
	at, filled    int
}

func newWindowECE(w, b int) *windowECE {
	return &windowECE{w: w, b: b, conf: make([]float64, b), correct: make([]float64, b), n: make([]int, b),
		ringC: make([]float64, w), ringO: make([]float64, w), ringB: make([]int, w)}
}

func (e *windowECE) add(p []float64, y int) {
	j := mathx.Argmax(p)
	c, o := p[j], 0.0
	if j == y {
		o = 1
	}
	bin := min(e.b-1, max(0, int(math.Ceil(c*float64(e.b)))-1))
	if e.filled == e.w {
		ob := e.ringB[e.at]
		e.conf[ob] -= e.ringC[e.at]
		e.correct[ob] -= e.ringO[e.at]
		e.n[ob]--
	} else {
		e.filled++
	}
	e.ringC[e.at], e.ringO[e.at], e.ringB[e.at] = c, o, bin
	e.conf[bin] += c
	e.correct[bin] += o
	e.n[bin]++
	e.at = (e.at + 1) % e.w
}

func (e *windowECE) value() float64 {
	s := 0.0
	for i := range e.conf {
		s += math.Abs(e.correct[i] - e.conf[i])
	}
	return s / float64(e.filled)
}

// eceThreshold returns the windowed ECE's threshold whose mean run
// length to a false alarm on calibrated streams is alarmARL rows: the
// checks' values of null runs, and the threshold found by bisection.
func eceThreshold(ctx context.Context, o AlarmOptions) (float64, error) {
	n := 10 * alarmARL
	runs := o.ARLRuns
	seqs, err := parallelRuns(ctx, o.Workers, runs, func(run int) []float64 {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(4_000_000+run)))
		st := &alarmStream{rng: rng, k: o.K}
		ece := newWindowECE(alarmECEWindow, alarmECEBins)
		var vals []float64
		for t := range n {
			p, _, y := st.next()
			ece.add(p, y)
			if t+1 >= alarmECEWindow && (t+1)%alarmECEEvery == 0 {
				vals = append(vals, ece.value())
			}
		}
		return vals
	})
	if err != nil {
		return 0, err
	}
	meanRun := func(thr float64) float64 {
		s := 0.0
		for _, v := range seqs {
			l := float64(n)
			for i, x := range v {
				if x >= thr {
					l = float64(alarmECEWindow + i*alarmECEEvery)
					break
				}
			}
			s += l
		}
		return s / float64(len(seqs))
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if meanRun(mid) < alarmARL {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// parallelRuns runs f for runs 0..n-1 on workers goroutines (0: all
// cores; parallel.ForContext) and returns the results in run order (each
// run seeds its own generator, so the results do not depend on workers).
func parallelRuns[T any](ctx context.Context, workers, n int, f func(run int) T) ([]T, error) {
	out := make([]T, n)
	err := parallel.ForContext(ctx, n, workers, func() struct{} { return struct{}{} }, func(_ struct{}, i int) { out[i] = f(i) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// wilsonUpper is the one-sided 95 % Wilson upper bound of a rate k/n.
func wilsonUpper(k, n int) float64 {
	z := 1.6449
	p := float64(k) / float64(n)
	d := 1 + z*z/float64(n)
	c := p + z*z/(2*float64(n))
	r := z * math.Sqrt(p*(1-p)/float64(n)+z*z/(4*float64(n)*float64(n)))
	return (c + r) / d
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	w := slices.Clone(v)
	slices.Sort(w)
	return mathx.Quantile(w, 0.5)
}

// WriteTable writes the three tables.
func (r *AlarmResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Calibration alarm, K = %d (top-label and class-wise bets), seed %d%s\n\n", r.K, r.Seed, map[bool]string{true: ", quick", false: ""}[r.Quick])
	fmt.Fprintf(w, "Test on calibrated streams: P(ever alarm) <= alpha\n%-8s %-6s %6s %7s %7s %8s %8s\n", "delay", "alpha", "runs", "rows", "alarms", "rate", "upper95")
	for _, x := range r.Null {
		fmt.Fprintf(w, "%-8d %-6g %6d %7d %7d %8.4f %8.4f\n", x.Delay, x.Alpha, x.Runs, x.Rows, x.Alarms, x.Rate, x.Upper)
	}
	fmt.Fprintf(w, "\nChange detector on calibrated streams: run length to a false alarm >= ARL\n%-8s %6s %10s %10s %9s %8s\n", "ARL", "runs", "mean", "median", "censored", "cap")
	for _, x := range r.ARL {
		fmt.Fprintf(w, "%-8g %6d %10.0f %10.0f %9d %8d\n", x.Target, x.Runs, x.Mean, x.Median, x.Censored, x.Cap)
	}
	fmt.Fprintf(w, "\nDetection delay after %d calibrated rows (rows from the shift to the alarm; ARL %d; windowed ECE of %d rows over %.4f)\n", alarmChangeAt, alarmARL, alarmECEWindow, r.ECEThreshold)
	fmt.Fprintf(w, "%-20s %-7s %-38s %5s %6s %7s %8s %8s\n", "shift", "delay", "detector", "runs", "early", "missed", "median", "mean")
	for _, x := range r.Delays {
		fmt.Fprintf(w, "%-20s %-7d %-38s %5d %6d %7d %8.0f %8.0f\n", x.Shift, x.Delay, x.Detector, x.Runs, x.Early, x.Missed, x.Median, x.Mean)
	}
	return nil
}

// Figures returns none: the tables are the result.
func (r *AlarmResult) Figures() map[string]report.Figure { return nil }
