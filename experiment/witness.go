package experiment

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/calib-dev/calib/kde"
	"github.com/calib-dev/calib/metric"
	"github.com/calib-dev/calib/progress"
	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/synth"
)

// RealSet is one set of real predictions.
type RealSet struct {
	Name   string
	Probs  []float64 // n×K
	Labels []int
	K      int
}

// RealWitnessOptions configures RealWitness. The zero value draws 2 label
// resamples per set.
type RealWitnessOptions struct {
	// Resamples is the number of label sets drawn from the model's own
	// probabilities (y_j ~ Categorical(f_j): calibrated by construction,
	// truth 0); 0 means 2.
	Resamples int
	// Quick keeps the first 1,000 samples of each set and 1 resample.
	Quick   bool
	Seed    uint64
	Workers int
	// Progress, if not nil, is told each finished set (a step counting the
	// sets; the phase names the last).
	Progress progress.Reporter
	ctx      context.Context // the call's context, its first argument
}

// RealWitnessRow is every canonical estimate of one set under one label
// source: the observed labels (Reps 1), or labels resampled from the
// predictions (mean and spread over the resamples; the truth is 0).
type RealWitnessRow struct {
	Set    string `json:"set"`
	N      int    `json:"n"`
	K      int    `json:"k"`
	Labels string `json:"labels"` // "observed" or "resampled"
	// H is the LOO bandwidth of the plug-in (it depends on the predictions
	// only, so it is the same for both label sources).
	H        float64 `json:"h"`
	PlugIn1  Stat    `json:"plugin_p1"`   // plug-in ECE^KDE, CE_1
	PlugIn2  Stat    `json:"plugin_p2"`   // plug-in ECE^KDE, CE_2^2
	Binned1  Stat    `json:"binned_p1"`   // canonical binned CE_1, 2 bins per class
	TopLabel Stat    `json:"toplabel_p1"` // top-label binned ECE, 15 equal-width bins (another notion, for context)
	Witness1 Stat    `json:"witness_p1"`  // kde.Witness p = 1 (mean bandwidth in H)
	U2       Stat    `json:"ustat_p2"`    // kde.Witness p = 2
}

// RealWitnessResult holds the rows, two per set.
type RealWitnessResult struct {
	Rows      []RealWitnessRow `json:"rows"`
	Resamples int              `json:"resamples"`
	Quick     bool             `json:"quick"`
	Seed      uint64           `json:"seed"`
}

// RealWitness compares, on real predictions, the plug-in ECE^KDE (LOO
// bandwidth), the canonical binned estimate (2 bins per class) and the
// converging estimators of kde.Witness, with the observed labels and with
// labels drawn from the predictions themselves (where every canonical
// estimate should be near 0).
func RealWitness(ctx context.Context, sets []RealSet, o RealWitnessOptions) (*RealWitnessResult, error) {
	o.ctx = ctx
	reps := o.Resamples
	if reps == 0 {
		reps = 2
	}
	if o.Quick {
		reps = 1
	}
	if reps < 1 {
		return nil, fmt.Errorf("experiment: %d resamples", reps)
	}
	res := &RealWitnessResult{Resamples: reps, Quick: o.Quick, Seed: o.Seed}
	parts := progress.NewParts(o.Progress, "real witness", len(sets))
	defer parts.End()
	for si, s := range sets {
		probs, labels := s.Probs, s.Labels
		if o.Quick && len(labels) > 1000 {
			probs, labels = probs[:1000*s.K], labels[:1000]
		}
		n, k := len(labels), s.K
		cv, err := kde.SelectBandwidth(o.ctx, kde.Canonical, probs, labels, k, nil, kde.BandwidthOptions{Workers: o.Workers})
		if err != nil {
			return nil, fmt.Errorf("experiment: %s: %w", s.Name, err)
		}
		type acc struct{ plug1, plug2, bin, top, w1, u2, hw []float64 }
		measure := func(y []int, a *acc) error {
			pe, err := kde.Estimate(o.ctx, kde.Canonical, probs, y, k, nil, kde.Options{Bandwidth: cv.Bandwidth, P: []float64{1, 2}, Workers: o.Workers})
			if err != nil {
				return err
			}
			b, err := metric.Canonical(probs, y, k, 1, nil, metric.BinOptions{Bins: 2})
			if err != nil {
				return err
			}
			top, topY := metric.TopR(probs, y, k, 1)
			tb, err := metric.BinScores(top, topY, nil, metric.BinOptions{Bins: 15})
			if err != nil {
				return err
			}
			w, err := kde.Witness(o.ctx, probs, y, k, nil, kde.WitnessOptions{Seed: o.Seed, Workers: o.Workers})
			if err != nil {
				return err
			}
			a.plug1, a.plug2 = append(a.plug1, pe.Values[0].Value), append(a.plug2, pe.Values[1].Value)
			a.bin, a.top = append(a.bin, b.Value), append(a.top, tb.ECE(1))
			a.w1, a.u2 = append(a.w1, w.Values[0].Value), append(a.u2, w.Values[1].Value)
			a.hw = append(a.hw, w.Values[0].Bandwidth)
			return nil
		}
		row := func(label string, a *acc) RealWitnessRow {
			return RealWitnessRow{Set: s.Name, N: n, K: k, Labels: label, H: cv.Bandwidth,
				PlugIn1: stat(a.plug1, nil, 0), PlugIn2: stat(a.plug2, nil, 0), Binned1: stat(a.bin, nil, 0),
				TopLabel: stat(a.top, nil, 0), Witness1: stat(a.w1, a.hw, 0), U2: stat(a.u2, nil, 0)}
		}
		var obs, rs acc
		if err := measure(labels, &obs); err != nil {
			return nil, fmt.Errorf("experiment: %s: %w", s.Name, err)
		}
		for r := 0; r < reps; r++ {
			y := synth.Labels(nil, probs, k, seedOf(o.Seed, 5, si, r))
			if err := measure(y, &rs); err != nil {
				return nil, fmt.Errorf("experiment: %s, resample %d: %w", s.Name, r, err)
			}
		}
		res.Rows = append(res.Rows, row("observed", &obs), row("resampled", &rs))
		parts.Finished(s.Name)
		if err := canceled(o.ctx); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// WriteTable prints one line per set and label source.
func (r *RealWitnessResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Canonical calibration error of real predictions: observed labels, and labels drawn from the predictions\n")
	fmt.Fprintf(w, "(%d resample(s), mean; truth 0). CE_1 estimates: plug-in ECE^KDE at the LOO bandwidth h, canonical binned\n", r.Resamples)
	fmt.Fprintf(w, "with 2 bins per class, the witness (its bandwidth hw); CE_2^2: plug-in and U-statistic. Top-label binned ECE\n")
	fmt.Fprintf(w, "(15 bins) is another notion, for context.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "set\tn\tK\tlabels\th\tplug-in CE_1\tbinned CE_1\twitness CE_1\thw\tplug-in CE_2^2\tU-stat CE_2^2\ttop-label ECE\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.3g\t%.4f\t%.4f\t%.4f\t%.3g\t%.5f\t%.5f\t%.4f\t\n", row.Set, row.N, row.K, row.Labels, row.H,
			row.PlugIn1.Mean, row.Binned1.Mean, row.Witness1.Mean, row.Witness1.H, row.PlugIn2.Mean, row.U2.Mean, row.TopLabel.Mean)
	}
	return tw.Flush()
}

// Figures returns no figures: the table is the result.
func (r *RealWitnessResult) Figures() map[string]report.Figure { return nil }
