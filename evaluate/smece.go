package evaluate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/parallel"
	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/notion"
	"github.com/calib-dev/calib/smooth"
)

// smeceDef is the smooth calibration error of Błasiok and Nakkiran as
// relplot 1.0.3 computes it (package smooth): at its fixed point sigma*
// (Options.SmECE.Sigma 0) or at a given sigma, for the top-label
// confidence (relplot's multiclass_logits_to_confidences), the positive
// class of one-column input (binary, relplot's own input) and, where
// ece_kde's notions include class_wise (K <= 20, or --mode naming it),
// each class's column against its indicator, averaged over classes. Each
// entry's bootstrap recomputes it on the resample at the full sample's
// sigma* (one bandwidth per resample); with Options.CIExact, and for
// relplot 1.0.1's convention (whose value depends on its search's grid),
// at the resample's own fixed point, searched again (as relplot's own
// interval of the smECE does, 11 bandwidths per resample).
var smeceDef = metricDef{
	name:      SmECE,
	sums:      []*sumsPart{smeceStreamSums},
	configure: configureSmECE,
	check:     func(o *Options) error { return checkSmECE(o.SmECE) },
	options: []Option{{Name: "smece-sigma", Kind: FloatOption, Default: "0", Stream: true, Metrics: MetricSet{SmECE},
		Usage: "smece: the bandwidth `sigma` in [0.0001, 1] (relplot's smECE_sigma); 0: the fixed point sigma* = smECE(sigma*) (relplot's smECE)",
		set:   floatField(func(float64) bool { return true }, "a finite number", func(o *StreamOptions) *float64 { return &o.SmECE.Sigma })}},
	compute:  (*evaluator).smece,
	interval: centered,
	define: func(c *config, e *Result) {
		e.Estimator, e.Kernel, e.Convention = "smooth", "reflected-gaussian", c.SmECE.Convention.String()
		e.BandwidthMethod = "fixed-point"
		if c.SmECE.Sigma != 0 {
			e.BandwidthMethod = "given"
		}
	},
	finish: finishSmECE,
}

// smeceConfig is smece's part of a stream's configuration (streamConfig):
// its options (Options.SmECE).
type smeceConfig struct {
	SmECEOptions smooth.Options `json:"smece"`
}

// configureSmECE sets smece's part of a stream's configuration: its
// options (relplot 1.0.3's convention: checkStreamable refuses 1.0.1's).
func configureSmECE(c *streamConfig, o StreamOptions) error {
	c.SmECEOptions = o.SmECE
	return nil
}

// apply sets smece's options of o, for its definition keys (Finish).
func (c smeceConfig) apply(o *Options) { o.SmECE = c.SmECEOptions }

// checkSmECE checks Options.SmECE: sigma 0 (the fixed point) or in
// [smooth.MinSigma, 1], eps in [0, 1), and one of relplot's conventions.
func checkSmECE(o smooth.Options) error {
	if sg := o.Sigma; !(sg == 0 || (sg >= smooth.MinSigma && sg <= 1)) {
		return optionError("smece-sigma", "smece sigma %v: want a bandwidth in [%g, 1], or 0 (the fixed point)", sg, smooth.MinSigma)
	}
	if e := o.Eps; !(e >= 0 && e < 1) {
		return optionError("smece-sigma", "smece eps %v: want a number in [0, 1)", e)
	}
	if cv := o.Convention; cv != smooth.Relplot && cv != smooth.Relplot101 {
		return optionError("convention", "smece convention %v is not one (valid: relplot, relplot-1.0.1)", cv)
	}
	return nil
}

func (ev *evaluator) smece() ([]*Result, error) {
	c, s := ev.cfg, ev.set
	var views []notion.Notion
	if s.Binary {
		views = append(views, notion.Binary)
	}
	views = append(views, notion.TopLabel)
	var out []*Result
	for _, v := range views {
		var f, y []float64
		if v == notion.Binary {
			f, y = metric.ClassColumn(s.Probs, s.Labels, s.K, 1)
		} else {
			f, y = metric.TopR(s.Probs, s.Labels, s.K, 1)
		}
		r, err := ev.smeceOne(f, y)
		if err != nil {
			return nil, err
		}
		e := &Result{Metric: SmECE, Notion: v, Bandwidth: ptr(r.Sigma), Value: jf(r.Value)}
		ev.setStat(e, func(idx []int) (float64, error) { return ev.smeceAt(f, y, r.Sigma, idx) })
		out = append(out, e)
	}
	if slices.Contains(c.notions, kde.ClassWise) {
		e, err := ev.smeceClassWise()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// smeceClassWise is the class_wise entry: the mean over the classes of
// each class column's smECE, each at its own sigma.
func (ev *evaluator) smeceClassWise() (*Result, error) {
	s := ev.set
	cols, ys := make([][]float64, s.K), make([][]float64, s.K)
	e := &Result{Metric: SmECE, Notion: notion.ClassWise}
	// The classes at once, each result in its place, summed in order.
	rs, errs := make([]smooth.Result, s.K), make([]error, s.K)
	if err := parallel.ForContext(ev.ctx, s.K, ev.cfg.Workers, func() struct{} { return struct{}{} }, func(_ struct{}, k int) {
		cols[k], ys[k] = metric.ClassColumn(s.Probs, s.Labels, s.K, k)
		rs[k], errs[k] = ev.smeceOne(cols[k], ys[k])
	}); err != nil {
		return nil, err
	}
	sum := 0.0
	for k, r := range rs {
		if errs[k] != nil {
			return nil, fmt.Errorf("class %d: %w", k, errs[k])
		}
		sum += r.Value
		e.PerClass = append(e.PerClass, data.Float(r.Value))
		e.PerClassBandwidth = append(e.PerClassBandwidth, r.Sigma)
	}
	e.Value, e.Sum = jf(sum/float64(s.K)), jf(sum)
	sigmas := e.PerClassBandwidth
	ev.setStat(e, func(idx []int) (float64, error) {
		sum := 0.0
		for k := range cols {
			v, err := ev.smeceAt(cols[k], ys[k], sigmas[k], idx)
			if err != nil {
				return 0, fmt.Errorf("class %d: %w", k, err)
			}
			sum += v
		}
		return sum / float64(len(cols)), nil
	})
	return e, nil
}

// smeceOne is smECE of the column f with outcomes y, weighted by the
// set's weights.
func (ev *evaluator) smeceOne(f, y []float64) (smooth.Result, error) {
	r, err := smooth.ECE(ev.ctx, f, y, ev.set.Weights, ev.cfg.SmECE)
	if err != nil {
		return r, fmt.Errorf("smece: %w", err)
	}
	return r, nil
}

// smeceAt returns smECE of the resample idx of the column f: at the full
// sample's sigma, or (CIExact) at the resample's own fixed point.
func (ev *evaluator) smeceAt(f, y []float64, sigma float64, idx []int) (float64, error) {
	c, w := ev.cfg, ev.set.Weights
	ro := c.SmECE
	// relplot 1.0.1's value comes from the largest grid its search
	// visited: only a search again gives it on a resample.
	if !c.CIExact && ro.Convention != smooth.Relplot101 {
		ro.Sigma = sigma
	}
	r, err := smooth.ECE(ev.ctx, metric.Resample(f, 1, idx), metric.Resample(y, 1, idx), metric.Resample(w, 1, idx), ro)
	if err != nil {
		return 0, fmt.Errorf("smece: %w", err)
	}
	return r.Value, nil
}

// smeceSums is smece's part of a stream's first pass: the summed smooth
// ECE (smooth.Sums) of each view Evaluate computes (smeceViews): the
// positive class of one-column input, the top-label confidence, and each
// class column where the notions include class_wise. About 330 KB each.
type smeceSums struct {
	Binary *smooth.Sums   `json:"binary,omitempty"`
	Top    *smooth.Sums   `json:"top_label"`
	Class  []*smooth.Sums `json:"class_wise,omitempty"`
}

// smeceClassWise says whether smece has a class-wise entry: where
// Evaluate's notions (ece_kde's, Options.Mode) include class_wise.
func smeceClassWise(mode string, k int, binary bool) (bool, error) {
	var ns NotionSet
	if err := ns.UnmarshalText([]byte(mode)); err != nil {
		return false, err
	}
	notions, _, err := ns.Resolve(&data.Set{K: k, Binary: binary})
	return slices.Contains(notions, kde.ClassWise), err
}

// smeceState is smeceStreamSums's part of the first pass's state
// (sumsState): smece's summed grids.
type smeceState struct {
	SmECESums *smeceSums `json:"smece,omitempty"`
}

// smeceStreamSums is smece's first pass: the summed grids of its views
// (SmECE: top-label, binary, each class), from which Finish computes it.
var smeceStreamSums = &sumsPart{
	what: "smece's",
	start: func(st *sumsState, _ *data.Batch) (err error) {
		st.SmECESums, err = newSmeceSums(st.Config, st.K, st.Binary)
		return err
	},
	add: func(st *sumsState, b *data.Batch) error {
		if err := st.SmECESums.add(b.Probs, b.Labels, b.K, b.Weights); err != nil {
			return b.RowsError(err)
		}
		return nil
	},
	merge: func(st, o *sumsState) error { return st.SmECESums.merge(o.SmECESums) },
	check: func(st *sumsState) error {
		if st.SmECESums == nil {
			return errors.New("missing smece sums")
		}
		return st.SmECESums.check(st.Config, st.K, st.Binary)
	},
	holds: func(st *sumsState) bool { return st.SmECESums != nil },
}

// newSmeceSums returns the empty sums of the views of rows of k columns.
func newSmeceSums(c *streamConfig, k int, binary bool) (*smeceSums, error) {
	classWise, err := smeceClassWise(c.Mode, k, binary)
	if err != nil {
		return nil, err
	}
	ss := &smeceSums{}
	if ss.Top, err = smooth.NewSums(c.SmECEOptions); err != nil {
		return nil, err
	}
	if binary {
		ss.Binary, _ = smooth.NewSums(c.SmECEOptions)
	}
	if classWise {
		ss.Class = make([]*smooth.Sums, k)
		for i := range ss.Class {
			ss.Class[i], _ = smooth.NewSums(c.SmECEOptions)
		}
	}
	return ss, nil
}

// add adds a batch's rows (n x k probabilities) to every view.
func (ss *smeceSums) add(p []float64, y []int, k int, w []float64) error {
	if ss.Binary != nil {
		f, o := metric.ClassColumn(p, y, k, 1)
		if err := ss.Binary.Add(f, o, w); err != nil {
			return err
		}
	}
	f, o := metric.TopR(p, y, k, 1)
	if err := ss.Top.Add(f, o, w); err != nil {
		return err
	}
	for c, cs := range ss.Class {
		f, o := metric.ClassColumn(p, y, k, c)
		if err := cs.Add(f, o, w); err != nil {
			return err
		}
	}
	return nil
}

// merge adds another shard's sums of the same views.
func (ss *smeceSums) merge(o *smeceSums) error {
	if (ss.Binary == nil) != (o.Binary == nil) || len(ss.Class) != len(o.Class) {
		return errors.New("smece sums of different views")
	}
	errs := []error{ss.Top.Merge(o.Top)}
	if ss.Binary != nil {
		errs = append(errs, ss.Binary.Merge(o.Binary))
	}
	for c := range ss.Class {
		errs = append(errs, ss.Class[c].Merge(o.Class[c]))
	}
	return errors.Join(errs...)
}

// check reports sums read from JSON that lack a view of rows of k columns.
func (ss *smeceSums) check(c *streamConfig, k int, binary bool) error {
	classWise, err := smeceClassWise(c.Mode, k, binary)
	if err != nil {
		return err
	}
	want := 0
	if classWise {
		want = k
	}
	if ss.Top == nil || (ss.Binary != nil) != binary || len(ss.Class) != want || slices.Contains(ss.Class, nil) {
		return errors.New("missing or inconsistent smece sums")
	}
	o := c.SmECEOptions
	o.Eps = cmp.Or(o.Eps, smooth.DefaultEps)
	for _, sm := range append([]*smooth.Sums{ss.Top, ss.Binary}, ss.Class...) {
		if sm != nil && sm.Options() != o {
			return fmt.Errorf("smece sums of %+v in a stream of %+v", sm.Options(), o)
		}
	}
	return nil
}

// finishSmECE returns the streamed smece entries: Evaluate's (values
// within 1e-12), without bootstrap intervals.
func finishSmECE(s *Sums, _ *KernelSums, _ *Evaluation) ([]*Result, error) {
	ss := s.st.SmECESums
	if ss == nil {
		return nil, errors.New("no smece sums")
	}
	one := func(sm *smooth.Sums) (smooth.Result, error) {
		r, err := sm.ECE(context.Background())
		if err != nil {
			return r, fmt.Errorf("smece: %w", err)
		}
		return r, nil
	}
	var out []*Result
	for _, v := range []struct {
		nt notion.Notion
		sm *smooth.Sums
	}{{notion.Binary, ss.Binary}, {notion.TopLabel, ss.Top}} {
		if v.sm == nil {
			continue
		}
		r, err := one(v.sm)
		if err != nil {
			return nil, err
		}
		out = append(out, &Result{Metric: SmECE, Notion: v.nt, Bandwidth: ptr(r.Sigma), Value: jf(r.Value)})
	}
	if ss.Class != nil {
		e := &Result{Metric: SmECE, Notion: notion.ClassWise}
		sum := 0.0
		for k, sm := range ss.Class {
			r, err := one(sm)
			if err != nil {
				return nil, fmt.Errorf("class %d: %w", k, err)
			}
			sum += r.Value
			e.PerClass = append(e.PerClass, data.Float(r.Value))
			e.PerClassBandwidth = append(e.PerClassBandwidth, r.Sigma)
		}
		e.Value, e.Sum = jf(sum/float64(len(ss.Class))), jf(sum)
		out = append(out, e)
	}
	return out, nil
}
