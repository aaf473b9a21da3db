package commands

import (
	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/kde"
)

func newBandwidthCmd() *Command {
	var in inputFlags
	var mode, objective string
	var o kde.BandwidthOptions
	var asJSON, progress bool
	cmd := command("bandwidth PRED", "Choose the ECE^KDE kernel bandwidth by leave-one-out maximum likelihood", exactArgs(1), func(cmd *Command, args []string) error {
		var err error
		if o.Objective, err = kde.ParseObjective(objective); err != nil {
			return optionError("--bandwidth-objective", err)
		}
		if err := refuseUnread(cmd.Flags(), map[string][]string{"no-refine": {"loo"}}, "--bandwidth-objective", []string{objective}); err != nil {
			return err
		}
		if _, err := evalflag.BandwidthNotion(mode, nil); err != nil {
			return optionError("", err) // "--mode: ..."
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		notion, err := evalflag.BandwidthNotion(mode, s)
		if err != nil {
			return optionError("", err)
		} else if mode == "" {
			mode = notion.String() // the provenance records the notion chosen
		}
		ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
		var done func()
		o.Progress, done = ui.Step(notion.String() + " bandwidth")
		r, err := bandwidth.Select(cmd.Context(), s, notion, o)
		done()
		ui.wait()
		if err != nil {
			return err
		}
		r.Provenance = newProvenance(cmd, args).AddInput("", s, in.o.Labels)
		if asJSON {
			return r.WriteJSON(cmd.OutOrStdout())
		}
		return r.WriteText(cmd.OutOrStdout())
	})
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	fs := cmd.Flags()
	fs.StringVar(&mode, "mode", "", "notion: canonical, class_wise (the paper's marginal), top_label or binary (default canonical; binary for one-column input)")
	fs.StringVar(&objective, "bandwidth-objective", "loo", "objective: loo or reference")
	fs.BoolVar(&o.NoRefine, "no-refine", false, "loo: return the best grid value without the refinement (Brent's method)")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines (0: all cores)")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&progress, "progress", true, "show a progress bar on stderr when it is a terminal")
	return cmd
}
