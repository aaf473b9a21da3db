"""Train with ECE^KDE as a differentiable calibration loss (the ECE^KDE
paper's use): a recalibration layer (a temperature and a bias per class) on
the validation logits of a real CIFAR-10 network, trained by gradient
descent on NLL + lambda * ECE^KDE (top-label notion), checked on held-out
data. Needs PyTorch.

    .venv/bin/python python/examples/train_with_loss.py

The loss's forward and backward are calib's exact value and gradient
(float64, CPU), so the regulariser is the number calib eval reports; the
same call works inside any training loop (logits=True differentiates with
respect to the logits)."""

import os

import numpy as np
import torch

import calib
from calib.torch import ece_kde_loss

here = os.path.dirname(os.path.abspath(__file__))
d = os.path.join(here, "..", "..", "testdata", "realsets", "cifar10_resnet110-brier")
z = torch.tensor(np.load(os.path.join(d, "logits.npy")), dtype=torch.float64)
y = torch.tensor(np.load(os.path.join(d, "labels.npy")))
train, test = slice(0, 2500), slice(2500, None)


def fit(lam, steps=150):
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(z.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_t, bias], lr=0.05)
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randperm(2500, generator=gen)[:500]
        out = z[train][idx] / torch.exp(log_t) + bias
        loss = torch.nn.functional.cross_entropy(out, y[train][idx])
        if lam:
            loss = loss + lam * ece_kde_loss(out, y[train][idx], bandwidth=0.1, mode="top_label", logits=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return (z[test] / torch.exp(log_t) + bias).numpy(), float(torch.exp(log_t))


def report(name, logits):
    ev = calib.evaluate(logits, y[test].numpy(), logits=True, metrics="ece_bin,ks,nll,accuracy")
    print(f"{name:24s} top-label ECE {ev.get('ece_bin', 'top_label', p=1).value:.4f}  "
          f"KS {ev.get('ks', 'top_r', r=1).value:.4f}  NLL {ev.nll.value:.4f}  accuracy {ev.accuracy.value:.4f}")


report("uncalibrated", z[test].numpy())
for lam in (0.0, 1.0, 4.0):
    logits, t = fit(lam)
    report(f"lambda = {lam} (T = {t:.2f})", logits)
