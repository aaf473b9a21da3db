package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/calib-dev/calib/data"
	"github.com/calib-dev/calib/internal/demo"
)

func newDemoCmd() *cobra.Command {
	ef := evalFlags{}
	var split string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run eval on embedded real data (CIFAR-10 ResNet-110 logits) and explain the numbers",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := loadAndEvaluate(cmd, func() (*data.Set, error) { return demo.Load(split) }, ef)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if ef.json {
				return writeEval(w, out, true)
			}
			fmt.Fprintf(w, "calib demo: the %s split of %s, a ResNet-110 trained on CIFAR-10 with the\n", split, demo.Name)
			fmt.Fprintf(w, "Brier score (real logits, embedded in the binary; softmax in float64).\n")
			fmt.Fprintf(w, "Try --mode all (adds marginal, K times the work) and --split test (10,000 rows).\n\n")
			if err := writeEval(w, out, false); err != nil {
				return err
			}
			fmt.Fprint(w, `
What the numbers mean:
- CE_p is the Lp distance between what the model predicts, f(x), and what
  happens, E[y | f(x)], averaged over the data: 0 means perfectly calibrated.
  CE_p^p is the same before the p-th root (the form of the paper's eq. 2).
- canonical compares the whole probability vector with the label frequencies
  among inputs that got (nearly) the same vector; it is the strictest notion.
  Its L1 value is a sum over the K classes, so it can exceed a per-class figure.
- marginal checks each class probability on its own (one-vs-rest) and sums
  the K class terms; top_label checks only the confidence of the predicted
  class against the accuracy at that confidence (like the usual ECE, without
  bins).
- E[y | f(x)] is estimated by a Dirichlet (Beta for one coordinate) kernel
  regression over the other samples; the bandwidth h is chosen by leave-one-out
  maximum likelihood ("loo"), refined by golden-section search.
- ece_bin and mce are the usual binned errors (15 equal-width bins; canonical
  on cells of the simplex); ece_bin_debiased removes the binned L2 error's
  upward bias; ks is the binning-free Kolmogorov-Smirnov error of the splines
  paper; sharpness is E[E[y|f]^2] (higher is sharper); mmce is a kernel
  measure; brier and nll are proper scores (lower is better).
- Add --ci for bootstrap intervals (200 resamples).
`)
			return nil
		},
	}
	ef.register(cmd)
	// The demo's defaults keep it to a few seconds on two cores: marginal
	// costs K times canonical and the test split four times the val split.
	cmd.Flags().Lookup("mode").DefValue = "canonical,top_label"
	ef.mode = "canonical,top_label"
	cmd.Flags().StringVar(&split, "split", "val", "embedded split: val (5,000 rows) or test (10,000 rows)")
	return cmd
}
