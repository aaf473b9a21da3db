package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/kde"
)

// evalFlags are the estimator flags of eval and demo.
type evalFlags struct {
	mode      string
	p         string
	bandwidth string
	objective string
	classMean bool
	workers   int
	json      bool
	progress  bool
}

func (f *evalFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.mode, "mode", "all", "notions, comma-separated: canonical, marginal, top_label, binary (one-column input), or all")
	fs.StringVar(&f.p, "p", "1,2", "exponents `p` >= 1 of the Lp calibration error, comma-separated")
	fs.StringVar(&f.bandwidth, "bandwidth", "auto", "kernel bandwidth h > 0, or auto (leave-one-out maximum likelihood per notion)")
	fs.StringVar(&f.objective, "bandwidth-objective", "loo", "objective of --bandwidth auto: loo, or reference (the reference code's l(h) - n log h, unrefined)")
	fs.BoolVar(&f.classMean, "class-mean", false, "marginal: report the mean over classes instead of the sum")
	fs.IntVar(&f.workers, "workers", 0, "goroutines (0: all cores); results are identical for any value")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.progress, "progress", true, "show progress bars on stderr when it is a terminal")
}

// evalEntry is one result of the JSON contract of `calib eval --json`:
// metric, notion, p, bandwidth, value (CE_p^p) and root (CE_p) are frozen;
// the other keys were added after.
type evalEntry struct {
	Metric    string    `json:"metric"`
	Notion    string    `json:"notion"`
	P         float64   `json:"p"`
	Bandwidth float64   `json:"bandwidth"`
	Value     jsonFloat `json:"value"`
	Root      jsonFloat `json:"root"`
	// BandwidthMethod says how the bandwidth was chosen: "fixed",
	// "loo" (grid), "loo-refined" (golden section) or "reference".
	BandwidthMethod string      `json:"bandwidth_method"`
	Excluded        int         `json:"excluded"`
	PerClass        []jsonFloat `json:"per_class,omitempty"`
	Aggregate       string      `json:"aggregate,omitempty"` // marginal: "sum" or "mean" over classes
	Warnings        []string    `json:"warnings,omitempty"`  // from the bandwidth selection
}

// evalOutput is the JSON object printed by `calib eval --json`.
type evalOutput struct {
	N            int         `json:"n"`
	K            int         `json:"k"`
	Results      []evalEntry `json:"results"`
	File         string      `json:"file,omitempty"`
	Binary       bool        `json:"binary,omitempty"`
	Renormalized int         `json:"renormalized,omitempty"`
	Modes        string      `json:"modes,omitempty"`
	Seconds      float64     `json:"seconds"`
}

func newEvalCmd() *cobra.Command {
	var in inputFlags
	var ef evalFlags
	cmd := &cobra.Command{
		Use:   "eval PRED",
		Short: "Estimate the Lp calibration error (ECE^KDE) of a prediction file",
		Long: `eval reads predictions (probabilities or, with --logits, logits) and labels
and prints the ECE^KDE estimate of CE_p^p and its p-th root CE_p for each
notion and p, with the bandwidth used and how it was chosen.

Formats: CSV (K columns then the label; optional header), NPY (with --labels),
NPZ (arrays probs or logits, and labels), JSON Lines ({"probs": [...],
"label": k} or {"logits": [...], "label": k}). One prediction column is a
binary problem: p1 = P(label = 1).`,
		Example: `  calib eval preds.csv
  calib eval test_logits.npy --labels test_labels.npy --logits --mode canonical --p 1
  calib eval preds.jsonl --bandwidth 0.02 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := loadAndEvaluate(cmd, func() (*data.Set, error) { return in.load(args[0]) }, ef)
			if err != nil {
				return err
			}
			return writeEval(cmd.OutOrStdout(), out, ef.json)
		},
	}
	in.register(cmd.Flags())
	ef.register(cmd)
	return cmd
}

// loadAndEvaluate loads a set and evaluates it; Seconds covers both.
func loadAndEvaluate(cmd *cobra.Command, load func() (*data.Set, error), ef evalFlags) (*evalOutput, error) {
	start := time.Now()
	s, err := load()
	if err != nil {
		return nil, err
	}
	ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), ef.progress)
	out, err := evaluate(s, ef, ui)
	ui.wait()
	if err != nil {
		return nil, err
	}
	out.Seconds = time.Since(start).Seconds()
	return out, nil
}

// evaluate runs ECE^KDE for every requested notion on s; ui (may be nil)
// shows the progress.
func evaluate(s *data.Set, ef evalFlags, ui *progressUI) (*evalOutput, error) {
	notions, note, err := parseModes(ef.mode, s)
	if err != nil {
		return nil, err
	}
	ps, err := parsePs(ef.p)
	if err != nil {
		return nil, err
	}
	bw, err := parseBandwidth(ef.bandwidth)
	if err != nil {
		return nil, err
	}
	obj, err := kde.ParseObjective(ef.objective)
	if err != nil {
		return nil, usageErrorf("--bandwidth-objective: %v", err)
	}
	if err := s.Require(2, "ECE^KDE"); err != nil {
		return nil, err
	}
	out := &evalOutput{N: s.N, K: s.K, File: s.File, Binary: s.Binary, Renormalized: s.Renormalized, Modes: note}
	for _, notion := range notions {
		h, method := bw.value, "fixed"
		var warnings []string
		if bw.auto {
			progress, done := ui.step(notion.String() + " bandwidth")
			cv, err := kde.SelectBandwidth(notion, s.Probs, s.Labels, s.K, kde.BandwidthOptions{Objective: obj, Workers: ef.workers, Progress: progress})
			done()
			if err != nil {
				return nil, fmt.Errorf("%s: bandwidth: %w", s.File, err)
			}
			h, method, warnings = cv.Bandwidth, obj.String(), cv.Warnings
			if cv.Refined {
				method += "-refined"
			}
		}
		progress, done := ui.step(notion.String() + " estimate")
		res, err := kde.Estimate(notion, s.Probs, s.Labels, s.K, kde.Options{Bandwidth: h, P: ps, ClassMean: ef.classMean, Workers: ef.workers, Progress: progress})
		done()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.File, err)
		}
		for i, v := range res.Values {
			e := evalEntry{Metric: "ece_kde", Notion: notion.String(), P: v.P, Bandwidth: h,
				Value: jsonFloat(v.Value), Root: jsonFloat(v.Root), BandwidthMethod: method, Excluded: res.Excluded, Warnings: warnings}
			if notion == kde.Marginal {
				e.Aggregate = "sum"
				if ef.classMean {
					e.Aggregate = "mean"
				}
				for _, c := range res.PerClass[i] {
					e.PerClass = append(e.PerClass, jsonFloat(c))
				}
			}
			out.Results = append(out.Results, e)
		}
	}
	return out, nil
}

// writeEval prints the results as a table or as one JSON object.
func writeEval(w io.Writer, out *evalOutput, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	kind := "probabilities"
	if out.Binary {
		kind = "binary (one column)"
	}
	fmt.Fprintf(w, "%s: n = %d, K = %d, %s\n", out.File, out.N, out.K, kind)
	if out.Renormalized > 0 {
		fmt.Fprintf(w, "renormalized %d rows whose sum was off by more than the tolerance\n", out.Renormalized)
	}
	if out.Modes != "" {
		fmt.Fprintf(w, "mode: %s\n", out.Modes)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tnotion\tp\tbandwidth\tchosen by\tCE_p^p\tCE_p\texcluded")
	for _, e := range out.Results {
		notion := e.Notion
		if e.Aggregate == "mean" {
			notion += " (mean)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%g\t%.4g\t%s\t%.6f\t%.6f\t%d\n", e.Metric, notion, e.P, e.Bandwidth,
			strings.ReplaceAll(e.BandwidthMethod, "-", " "), float64(e.Value), float64(e.Root), e.Excluded)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range out.Results {
		for _, m := range e.Warnings {
			if !seen[e.Notion+m] {
				seen[e.Notion+m] = true
				fmt.Fprintf(w, "warning: %s bandwidth: %s\n", e.Notion, m)
			}
		}
	}
	fmt.Fprintf(w, "\nwall time %.3f s\n", out.Seconds)
	return nil
}
