package commands

import (
	"github.com/calib-dev/calib/bandwidth"
	"github.com/calib-dev/calib/evaluate/evalflag"
	"github.com/calib-dev/calib/optionspec"
)

func newBandwidthCmd() *Command {
	var in inputFlags
	var opts *optionspec.Flags
	var asJSON, progress bool
	cmd := command("bandwidth PRED", "Choose the ECE^KDE kernel bandwidth by leave-one-out maximum likelihood", exactArgs(1), func(cmd *Command, args []string) error {
		o, err := bandwidth.ParseOptions(opts.Given(cmd.Flags().Changed))
		if err != nil {
			return optionError("", err)
		}
		if _, err := evalflag.BandwidthNotion(o.Mode, nil); err != nil {
			return optionError("", err) // "--mode: ..."
		}
		s, err := in.load(cmd, args[0])
		if err != nil {
			return err
		}
		notion, err := evalflag.BandwidthNotion(o.Mode, s)
		if err != nil {
			return optionError("", err)
		}
		ui := newProgressUI(cmd.Context(), cmd.ErrOrStderr(), progress)
		var done func()
		o.Progress, done = ui.Step(notion.String() + " bandwidth")
		r, err := bandwidth.Select(cmd.Context(), s, notion, o.BandwidthOptions)
		done()
		ui.wait()
		if err != nil {
			return err
		}
		r.Provenance = newProvenance(cmd, args).AddInput("", s, in.o.Labels)
		r.Provenance.Options["mode"] = notion.String() // the notion chosen, where --mode was left out
		if asJSON {
			return r.WriteJSON(cmd.OutOrStdout())
		}
		return r.WriteText(cmd.OutOrStdout())
	})
	in.register(cmd.Flags())
	in.registerWeights(cmd.Flags(), false)
	fs := cmd.Flags()
	opts = registerSpecs(fs, bandwidth.OptionSpecs())
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&progress, "progress", true, "show a progress bar on stderr when it is a terminal")
	return cmd
}
