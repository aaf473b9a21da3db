#!/bin/bash
# streamed vs in-memory on the 12 real CIFAR sets (test split): equal-mass Doane bins, sharpness, mmce, ece_kde at every row; ece_witness (K = 10 sets)
cd /tmp/real12b
F="--mode canonical,top_label --bandwidth 0.02 --json --progress=false --metrics ece_kde,ece_bin,mce,ece_bin_debiased,ks,mmce,sharpness,brier,nll,accuracy,confidence --binning equal_mass --bin-rule doane --p 1,2"
for d in /work/shared/data/logits/*/; do
  n=$(basename $d)
  /tmp/calib eval $d/test_logits.npy --labels $d/test_labels.npy --logits $F > $n.mem.json
  /usr/bin/time -f "%e s %M KB" -o $n.time /tmp/calib eval --stream $d/test_logits.npy --labels $d/test_labels.npy --logits $F --eval-points all --rows 3000 > $n.str.json
  case $n in cifar10_*)
    W="--json --progress=false --metrics ece_witness"
    /tmp/calib eval $d/test_logits.npy --labels $d/test_labels.npy --logits $W > $n.wmem.json
    /usr/bin/time -f "%e s %M KB" -o $n.wtime /tmp/calib eval --stream $d/test_logits.npy --labels $d/test_labels.npy --logits $W --eval-points all --rows 3000 > $n.wstr.json
    /usr/bin/time -f "%e s %M KB" -o $n.wdtime /tmp/calib eval --stream $d/test_logits.npy --labels $d/test_labels.npy --logits $W > $n.wdef.json
  esac
done
echo done > done
