#!/bin/sh
# Whole-process timings of the metric-as-unit refactor (before: a89223a, after: its
# last commit), interleaved, avx2; raw lines appended to /tmp/cmds-time.txt.
D=/work/shared/data/logits
A=$D/cifar10_densenet121-brier; F=$D/cifar10_densenet121-flsd53; C=$D/cifar100_resnet110-brier
t() { name=$1; shift; for v in before after; do b=/tmp/calib; [ $v = before ] && b=/tmp/calib-before; /usr/bin/time -f "$name $v %e s %M KB" env CALIB_KERNEL=avx2 $b "$@" --progress=false > /dev/null 2>>/tmp/cmds-time.txt || echo "FAIL $name $v"; done; }
for r in 1 2 3; do
t eval-k10 eval $A/test_logits.npy --labels $A/test_labels.npy --logits
t eval-k10-ci eval $A/test_logits.npy --labels $A/test_labels.npy --logits --ci
t eval-all-k10 eval $A/test_logits.npy --labels $A/test_labels.npy --logits --metrics all
t eval-stream-k10 eval $A/test_logits.npy --labels $A/test_labels.npy --logits --stream
t demo demo
t compare-k10 compare --val $F/val_logits.npy --val-labels $F/val_labels.npy --test $F/test_logits.npy --test-labels $F/test_labels.npy --logits
done
