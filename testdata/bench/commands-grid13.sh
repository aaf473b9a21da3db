#!/bin/sh
# whole-process timings, before/after interleaved, avx2
D=/work/shared/data/logits
A=$D/cifar10_densenet121-brier; F=$D/cifar10_densenet121-flsd53; C=$D/cifar100_resnet110-brier
t() { name=$1; shift; for v in before after; do b=/tmp/calib; [ $v = before ] && b=/tmp/calib-before; /usr/bin/time -f "$name $v %e s %M KB" env CALIB_KERNEL=avx2 $b "$@" --progress=false > /dev/null 2>>/tmp/cmds-time.txt || echo "FAIL $name $v"; done; }
for r in 1 2; do
t eval-k10 eval $A/test_logits.npy --labels $A/test_labels.npy --logits
t eval-k10-ci eval $A/test_logits.npy --labels $A/test_labels.npy --logits --ci
t eval-k100 eval $C/test_logits.npy --labels $C/test_labels.npy --logits
t eval-all-k10 eval $A/test_logits.npy --labels $A/test_labels.npy --logits --metrics all
t demo demo
t report-val-k10 report $F/test_logits.npy --labels $F/test_labels.npy --logits --val $F/val_logits.npy --val-labels $F/val_labels.npy -o /tmp/r.html
t compare-k10 compare --val $F/val_logits.npy --val-labels $F/val_labels.npy --test $F/test_logits.npy --test-labels $F/test_labels.npy --logits
done
