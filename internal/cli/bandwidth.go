package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/evaluate"
	"github.com/calib-dev/calib/kde"
)

// bandwidthOutput is the JSON object printed by `calib bandwidth --json`.
// bandwidth, objective, grid and loglik are the contract; loglik holds null
// where the objective is -Inf.
type bandwidthOutput struct {
	Bandwidth float64          `json:"bandwidth"`
	Objective string           `json:"objective"`
	Grid      []float64        `json:"grid"`
	LogLik    []evaluate.Float `json:"loglik"`
	Notion    string           `json:"notion"`
	Index     int              `json:"index"`
	Refined   bool             `json:"refined"`
	// LogLikAt is the objective at the selected bandwidth.
	LogLikAt evaluate.Float `json:"loglik_at_bandwidth"`
	Excluded int            `json:"excluded"`
	Warnings []string       `json:"warnings,omitempty"`
	N        int            `json:"n"`
	K        int            `json:"k"`
	// Provenance: the tool version, the command, its options and input.
	Provenance *provenance `json:"provenance,omitempty"`
}

func newBandwidthCmd() *cobra.Command {
	var in inputFlags
	var mode, objective string
	var noRefine, asJSON, progress bool
	var workers int
	cmd := &cobra.Command{
		Use:   "bandwidth PRED",
		Short: "Choose the ECE^KDE kernel bandwidth by leave-one-out maximum likelihood",
		Long: `bandwidth prints the bandwidth that --bandwidth auto would use for one notion
and the objective over the whole grid (the reference code's 20 values:
15 log-spaced from 1e-5 to 1e-1, then 0.2, 0.4, 0.6, 0.8, 1.0).

Objectives: loo, the leave-one-out log-likelihood
  l(h) = sum_j log( (1/(n-1)) sum_{i != j} k_h(f_j; f_i) ),
maximised on the grid and refined by a golden-section search in log h; and
reference, the reference code's l(h) - n log h, scanned as it does and not
refined.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := kde.ParseObjective(objective)
			if err != nil {
				return usageErrorf("--bandwidth-objective: %v", err)
			}
			if mode != "" {
				if _, _, err := modeNotions(mode, nil); err != nil {
					return err
				}
			}
			if err := in.check(); err != nil {
				return err
			}
			s, err := in.load(args[0])
			if err != nil {
				return err
			}
			if mode == "" {
				mode = "canonical"
				if s.Binary {
					mode = "binary"
				}
			}
			notions, _, err := modeNotions(mode, s)
			if err != nil {
				return err
			}
			if len(notions) != 1 {
				return usageErrorf("--mode: bandwidth takes one notion, got %d", len(notions))
			}
			if err := s.Require(2, "bandwidth selection"); err != nil {
				return err
			}
			ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
			fn, done := ui.Step(notions[0].String() + " bandwidth")
			cv, err := kde.SelectBandwidth(notions[0], s.Probs, s.Labels, s.K, s.Weights, kde.BandwidthOptions{Objective: obj, NoRefine: noRefine, Workers: workers, Progress: fn, Context: cmd.Context()})
			done()
			ui.wait()
			if err != nil {
				return fmt.Errorf("%s: %w", s.File, err)
			}
			out := bandwidthOutput{Bandwidth: cv.Bandwidth, Objective: obj.String(), Grid: cv.Grid, Notion: notions[0].String(),
				Index: cv.Index, Refined: cv.Refined, LogLikAt: evaluate.Float(cv.LogLik), Excluded: cv.Excluded, Warnings: cv.Warnings, N: s.N, K: s.K}
			for _, v := range cv.GridLL {
				out.LogLik = append(out.LogLik, evaluate.Float(v))
			}
			out.Provenance = newProvenance(cmd, args)
			out.Provenance.input("", s, in.labels)
			return writeBandwidth(cmd.OutOrStdout(), &out, asJSON)
		},
	}
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	fs := cmd.Flags()
	fs.StringVar(&mode, "mode", "", "notion: canonical, marginal, top_label or binary (default canonical; binary for one-column input)")
	fs.StringVar(&objective, "bandwidth-objective", "loo", "objective: loo or reference")
	fs.BoolVar(&noRefine, "no-refine", false, "loo: return the best grid value without the golden-section refinement")
	fs.IntVar(&workers, "workers", 0, "goroutines (0: all cores)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&progress, "progress", true, "show a progress bar on stderr when it is a terminal")
	return cmd
}

func writeBandwidth(w io.Writer, out *bandwidthOutput, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(out)
	}
	how := "best grid value"
	if out.Refined {
		how = "golden-section refinement of the best grid value"
	}
	fmt.Fprintf(w, "%s bandwidth (n = %d, K = %d), objective %s\n", out.Notion, out.N, out.K, out.Objective)
	fmt.Fprintf(w, "selected h = %.6g (%s), objective %.6f\n", out.Bandwidth, how, float64(out.LogLikAt))
	for _, m := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", m)
	}
	if out.Excluded > 0 {
		fmt.Fprintf(w, "%d points with zero leave-one-out density at every h were left out\n", out.Excluded)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "h\tobjective\t")
	for i, h := range out.Grid {
		mark := ""
		if i == out.Index {
			mark = "<- best grid value"
		}
		fmt.Fprintf(tw, "%.6g\t%.6f\t%s\n", h, float64(out.LogLik[i]), mark)
	}
	return tw.Flush()
}
