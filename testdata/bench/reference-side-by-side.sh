#!/bin/sh
# Side by side: the ECE^KDE reference (ece_kde.py in $1, Debian's python3-torch)
# against calib (the binary $2), h = 0.05, p = 1, on the cases below, one after the other on
# the same CPU. The reference runs in process (best of 2, 2 threads); calib runs whole
# processes (best of 3, CALIB_KERNEL as set by the caller), on the same probabilities
# written as float64 .npy files ($3: the logits directory, e.g. ../shared/data/logits).
set -e
ref=$1 calib=$2 logits=$3
# python3 must be Debian's (with python3-torch and python3-numpy): PATH=/usr/bin:$PATH where pyenv shadows it.
dir=$(mktemp -d)
python3 - "$logits" "$dir" <<'PY'
import sys, numpy as np
logits, out = sys.argv[1], sys.argv[2]
def softmax(z):
    z = z - z.max(axis=1, keepdims=True); e = np.exp(z); return e / e.sum(axis=1, keepdims=True)
def save(name, p, y, mode):
    np.save(f"{out}/{name}_probs.npy", p); np.save(f"{out}/{name}_labels.npy", y.astype(np.int64))
    open(f"{out}/{name}.mode", "w").write(mode)
c10 = f"{logits}/cifar10_densenet121-brier"
p = softmax(np.load(f"{c10}/test_logits.npy").astype(np.float64)); y = np.load(f"{c10}/test_labels.npy")
save("1-canonical-cifar10", p, y, "canonical")
save("4-toplabel-cifar10", p, y, "top_label")
rng = np.random.default_rng(29)
d = rng.dirichlet(np.full(10, 0.3), size=10000)
yd = np.array([rng.choice(10, p=row) for row in d])
save("2-canonical-dirichlet", d, yd, "canonical")
c100 = f"{logits}/cifar100_resnet110-brier"
p = softmax(np.load(f"{c100}/test_logits.npy").astype(np.float64))[:5000]; y = np.load(f"{c100}/test_labels.npy")[:5000]
save("3-canonical-cifar100", p, y, "canonical")
PY
echo "case reference_s reference_value"
python3 "$(dirname "$0")/reference-side-by-side.py" "$ref" "$dir" 2 2
echo "case calib_s calib_value"
for m in "$dir"/*.mode; do
  name=$(basename "$m" .mode)
  mode=$(cat "$m")
  best=
  for i in 1 2 3; do
    s=$( { /usr/bin/time -f "%e" "$calib" eval "$dir/${name}_probs.npy" --labels "$dir/${name}_labels.npy" --mode "$mode" --p 1 --bandwidth 0.05 --json --progress=false > "$dir/out.json"; } 2>&1 )
    best=$(python3 -c "print(min(float('$s'), float('${best:-1e9}')))")
  done
  value=$(python3 -c "import json; r=json.load(open('$dir/out.json'))['results']; print([x['value'] for x in r if x['metric']=='ece_kde'][0])")
  echo "$name $best $value"
done
rm -rf "$dir"
