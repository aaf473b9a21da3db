package training

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calib-dev/calib/report"
	"github.com/calib-dev/calib/train"
)

// TestTrainingQuick runs the quick study on vehicle with one seed: every
// configuration is trained and measured with finite figures, XE learns
// (test accuracy above 0.5, chance 0.26), the selection picks each
// family's lowest validation ECE^KDE, the table and the figure render, and
// a second call reads the cache: a tampered cached figure comes back, and
// a cached run whose fingerprint does not match is trained again.
func TestTrainingQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 13 configurations: runs without -short")
	}
	dir := t.TempDir()
	o := Options{Quick: true, Seeds: 1, Dir: dir}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != len(Configs()) || len(res.Summaries) != len(Configs()) || len(res.Timing) != 1 {
		t.Fatalf("%d runs, %d summaries, %d timing rows", len(res.Runs), len(res.Summaries), len(res.Timing))
	}
	for _, r := range res.Runs {
		for _, m := range []TrainMetrics{r.Val, r.Pre, r.Post} {
			for _, v := range []float64{m.Accuracy, m.ECEKDE, m.Bandwidth, m.TopECE, m.NLL} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("%s: metric %v in %+v", r.Config.Name(), v, m)
				}
			}
		}
		if !(r.Temperature > 0) || r.BestEpoch < 1 || r.BestEpoch > r.Epochs {
			t.Errorf("%s: temperature %v, best epoch %d of %d", r.Config.Name(), r.Temperature, r.BestEpoch, r.Epochs)
		}
		if r.Config.Loss == train.LossXE && !(r.Pre.Accuracy > 0.5) {
			t.Errorf("xe: test accuracy %v", r.Pre.Accuracy)
		}
	}
	for _, sel := range res.Selected("vehicle") {
		for _, s := range res.Summaries {
			if s.Config.Loss == sel.Config.Loss && s.Val.ECEKDE.Mean < sel.Val.ECEKDE.Mean {
				t.Errorf("%s selected, but %s has a lower validation ECE^KDE", sel.Config.Name(), s.Config.Name())
			}
		}
	}
	if n := len(res.Selected("vehicle")); n != len(methods) {
		t.Errorf("%d selected configurations, want %d", n, len(methods))
	}
	var tb bytes.Buffer
	if err := res.WriteTable(&tb); err != nil || !strings.Contains(tb.String(), "| kde-xe 0.05 |") || !strings.Contains(tb.String(), "KDE-XE overhead") ||
		!strings.Contains(tb.String(), "| vehicle | XE | ") {
		t.Errorf("table (%v):\n%s", err, tb.String())
	}
	if err := report.Write(&bytes.Buffer{}, res.Figures()["tradeoff"], "svg"); err != nil {
		t.Error(err)
	}

	// The cache: tamper with one run's accuracy and another's fingerprint.
	tampered := filepath.Join(dir, "runs", "vehicle", "mmce_1-seed1.json")
	stale := filepath.Join(dir, "runs", "vehicle", "xe_0-seed1.json")
	edit := func(path string, fn func(*Trained)) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var run Trained
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		if run.Config.Name() == "" || run.Set != "vehicle" {
			t.Errorf("%s does not describe its run: %+v", path, run)
		}
		fn(&run)
		if b, err = json.Marshal(run); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit(tampered, func(r *Trained) { r.Pre.Accuracy = 0.123 })
	edit(stale, func(r *Trained) { r.Fingerprint = "old"; r.Pre.Accuracy = 0.456 })
	again, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.Runs {
		switch r.Config.Name() {
		case "mmce 1":
			if r.Pre.Accuracy != 0.123 {
				t.Errorf("mmce 1 was not read from the cache (accuracy %v)", r.Pre.Accuracy)
			}
		case "xe":
			if r.Pre.Accuracy == 0.456 {
				t.Error("a run with a stale fingerprint was read from the cache")
			}
			if r.Pre != res.Runs[i].Pre || r.Val != res.Runs[i].Val || r.Post != res.Runs[i].Post {
				t.Errorf("xe retrained differs (training is seeded): %+v vs %+v", r.Pre, res.Runs[i].Pre)
			}
		}
	}
}

// TestFingerprintStable: the cache key of a run keeps the form of the
// first cached study (docs/evidence/training/runs), so that adding options to
// train.Config does not invalidate it.
func TestFingerprintStable(t *testing.T) {
	setup := Setup{ValFrac: 0.2, TestFrac: 0.2, SplitSeed: 1, BinsTopECE: 15}
	cfg := train.Config{Loss: "xe", Layers: 2, Hidden: 64, Epochs: 30, Batch: 128, LR: 0.001, Patience: 10, Seed: 1}
	want := "v1 dna split 0.2/0.2/1 topbins 15 {Loss:xe Lambda:0 Smoothing:0 Bandwidth:0 P:0 Layers:2 Hidden:64 Dropout:0 Epochs:30 Batch:128 LR:0.001 Patience:10 Seed:1}"
	if got := fingerprint(setup, "dna", cfg); got != want {
		t.Errorf("fingerprint\n%s\nwant\n%s", got, want)
	}
	cfg.Optimizer = train.OptimizerSGD
	if fingerprint(setup, "dna", cfg) == want {
		t.Error("the optimizer does not change the fingerprint")
	}
	cfg.Optimizer, cfg.Loss = "", train.LossKDEXE
	if got := fingerprint(setup, "dna", cfg); !strings.HasSuffix(got, "Seed:1} kde-gradient 2") {
		t.Errorf("kde-xe fingerprint %s", got)
	}
}
