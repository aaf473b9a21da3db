#!/bin/bash
D=/work/shared/data/logits
for s in $(ls $D | grep -v README); do
 for mode in canonical top_label marginal; do
  case $s in cifar100*) [ $mode = marginal ] && continue;; esac
  case $s in cifar10_resnet110-brier|cifar10_densenet121-brier) ;; *) [ $mode = marginal ] && continue;; esac
  line="$s $mode"
  for v in before after; do b=/tmp/calib; [ $v = before ] && b=/tmp/calib-before
   s0=$(date +%s.%N)
   out=$(CALIB_KERNEL=avx2 $b bandwidth $D/$s/test_logits.npy --labels $D/$s/test_labels.npy --logits --mode $mode --json --progress=false | python3 -c "import json,sys; d=json.load(sys.stdin); print('%.6g %.10g %s' % (d['bandwidth'], d['loglik_at_bandwidth'], d['refined']))")
   s1=$(date +%s.%N)
   line="$line | $v h=$out t=$(echo "$s1 - $s0" | bc | cut -c1-5)"
  done
  echo "$line"
 done
done
