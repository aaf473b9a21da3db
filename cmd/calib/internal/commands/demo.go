package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/calib-dev/calib/cmd/calib/internal/demo"
	"github.com/calib-dev/calib/cmd/calib/internal/demotext"
	"github.com/calib-dev/calib/evaluate"
)

func newDemoCmd() *Command {
	var rf reportFlags
	cmd := command("demo", "Run the whole job on embedded real data (CIFAR-10 ResNet-110 logits): metrics, recalibration, HTML report", exactArgs(0), func(cmd *Command, args []string) (err error) {
		start := time.Now()
		if rf.out == "" {
			dir, derr := outputDir("", "demo")
			if derr != nil {
				return derr
			}
			rf.out = filepath.Join(dir, "calib-demo-report.html")
			defer func() {
				if err != nil { // a refused flag, or a failure: no empty directory left behind
					os.RemoveAll(dir)
				}
			}()
		}
		o, err := rf.options(cmd.Flags())
		if err != nil {
			return err
		}
		test, val, err := demo.Sets()
		if err != nil {
			return err
		}
		o.Figures.Names = demo.Classes
		doc, err := rf.write(cmd, test, val, o, newProvenance(cmd, args).AddInput("test", test, "").AddInput("val", val, ""))
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if rf.ef.json {
			return evaluate.WriteJSON(w, doc.Evaluation)
		}
		if err := demotext.Write(w, doc.Evaluation, doc.Comparison, doc.Tests); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nreport: %s (%.1f s in all)\n", rf.out, time.Since(start).Seconds())
		warnNotDrawn(cmd.ErrOrStderr(), doc)
		return nil
	})
	rf.register(cmd, "the HTML report `FILE` to write (default: calib-demo-report.html in a new temporary directory)")
	return cmd
}
