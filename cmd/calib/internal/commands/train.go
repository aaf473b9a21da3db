package commands

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/calib-dev/calib/train"
)

// lossFlags names the losses that read each flag of train that some
// losses only read.
var lossFlags = map[string][]string{
	"lambda":    {train.LossKDEXE, train.LossMMCE},
	"bandwidth": {train.LossKDEXE},
	"p":         {train.LossKDEXE},
	"smoothing": {train.LossLS},
}

func newTrainCmd() *Command {
	var o train.RunOptions
	cfg := &o.Config
	cmd := command("train --data FILE.csv --loss xe|kde-xe|mmce|focal|ls -o DIR", "Train an MLP with cross-entropy or KDE-XE on a tabular data set and write its val/test logits", exactArgs(0), func(cmd *Command, args []string) error {
		if o.Data == "" || o.Dir == "" {
			return usageErrorf("--data FILE.csv and -o DIR are required")
		}
		if err := refuseUnread(cmd.Flags(), lossFlags, "--loss", []string{cfg.Loss}); err != nil {
			return err
		}
		if err := refuseUnread(cmd.Flags(), map[string][]string{"momentum": {train.OptimizerSGD}}, "--optimizer", []string{cfg.Optimizer}); err != nil {
			return err
		}
		if err := cfg.SetDefaults(); err != nil {
			return usageErrorf("%v", err)
		}
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return usageErrorf("-o %s: %v", o.Dir, err)
		}
		if err := checkOutput("-o", filepath.Join(o.Dir, "model.json")); err != nil {
			return err
		}
		o.Provenance = newProvenance(cmd, args)
		res, err := train.Run(o)
		if err != nil {
			return err
		}
		return res.WriteText(cmd.OutOrStdout())
	})
	fs := cmd.Flags()
	fs.StringVar(&o.Data, "data", "", "the tabular `FILE.csv`")
	fs.StringVarP(&o.Dir, "output", "o", "", "output `DIR`")
	fs.StringVar(&cfg.Loss, "loss", "xe", "loss: "+strings.Join(train.Losses(), ", "))
	fs.Float64Var(&cfg.Lambda, "lambda", 0.1, "kde-xe, mmce: weight of the ECE^KDE or MMCE term")
	fs.Float64Var(&cfg.Smoothing, "smoothing", 0.1, "ls: label smoothing alpha")
	fs.Float64Var(&cfg.Bandwidth, "bandwidth", 0, "kde-xe: fixed kernel bandwidth (0: LOO MLE per mini-batch)")
	fs.Float64Var(&cfg.P, "p", 1, "kde-xe: exponent p of CE_p^p")
	fs.IntVar(&cfg.Layers, "layers", 2, "hidden layers")
	fs.IntVar(&cfg.Hidden, "hidden", 64, "units per hidden layer")
	fs.Float64Var(&cfg.Dropout, "dropout", 0, "dropout rate")
	fs.IntVar(&cfg.Epochs, "epochs", 30, "at most this many epochs")
	fs.IntVar(&cfg.Batch, "batch", 128, "mini-batch size")
	fs.StringVar(&cfg.Optimizer, "optimizer", "adam", "adam, or sgd (with momentum)")
	fs.Float64Var(&cfg.Momentum, "momentum", 0.9, "sgd: momentum")
	fs.Float64Var(&cfg.LR, "lr", 0, "learning rate (default 1e-3 for adam, 0.01 for sgd)")
	fs.IntVar(&cfg.Patience, "patience", 5, "stop after this many epochs without a better validation NLL")
	fs.Uint64Var(&cfg.Seed, "seed", DefaultSeed, "seed of the weights and the mini-batches")
	fs.Float64Var(&o.Val, "val", 0.2, "validation fraction")
	fs.Float64Var(&o.Test, "test", 0.2, "test fraction")
	fs.Uint64Var(&o.SplitSeed, "split-seed", 1, "seed of the stratified split")
	return cmd
}
