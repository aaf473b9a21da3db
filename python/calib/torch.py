"""ECE^KDE as a differentiable loss for PyTorch (needs torch).

ece_kde_loss(probs, labels) is the ECE^KDE estimate of CE_p^p (ECE^KDE
paper eq. 2, the estimator of section 4 with the Dirichlet kernel of
eq. 3, i = j excluded) and its backward pass is calib's exact gradient
(kde.Gradient: each of the n x K entries a free variable, through both the
evaluation points and the kernel centres, the Dirichlet normaliser's
derivative by the digamma function). Both are computed in float64 on the
CPU by the Go library; a tensor on another device or of another dtype is
moved there and the gradient moved back.
"""

import math
import numbers

import numpy as np
import torch

from . import _api, _native

__all__ = ["ece_kde_loss", "ECEKDELoss"]


def _gradient(x, labels, weights, bandwidth, p, mode, logits, exact):
    xn, dtype, y, lcode, w = _native.arrays(x, labels, weights, "logits" if logits else "probs")
    opts = {"name": "logits" if logits else "probs", "bandwidth": float(bandwidth), "p": float(p), "mode": mode, "logits": bool(logits), "exact": bool(exact)}
    code, msg, value, grad = _native.backend().grad(opts, xn, dtype, y, lcode, w)
    _native.check(code, msg)
    return value, grad.reshape(xn.shape)


def _widen(x, logits):
    """x on the CPU in float64. Half-precision probabilities (float16,
    bfloat16: an AMP softmax's rows sum to 1 within a few of their eps) are
    divided by their row sums where each is within 2 K eps of 1, so that
    their rounding is not read as bad input; the gradient is that of the
    divided rows (the rounding is not differentiated). Rows further off
    are left for the library to report."""
    xd = x.detach().to(device="cpu", dtype=torch.float64)
    if logits or x.dtype not in (torch.float16, torch.bfloat16) or xd.ndim != 2 or xd.shape[1] < 2:
        return xd
    tol = 2 * xd.shape[1] * torch.finfo(x.dtype).eps
    s = xd.sum(dim=1, keepdim=True)
    if bool(((s - 1).abs() <= tol).all()):
        xd = xd / s
    return xd


class ECEKDELoss(torch.autograd.Function):
    """The autograd Function behind ece_kde_loss: forward computes the
    estimate and its gradient together, backward scales the gradient."""

    @staticmethod
    def forward(ctx, x, labels, bandwidth, p, mode, logits, exact, weights):
        xd = _widen(x, logits)
        value, grad = _gradient(xd.numpy(), labels, weights, bandwidth, p, mode, logits, exact)
        g = torch.from_numpy(grad).reshape(x.shape)
        ctx.save_for_backward(g)
        ctx.target = (x.device, x.dtype)
        return torch.tensor(value, dtype=x.dtype, device=x.device)

    @staticmethod
    def backward(ctx, grad_output):
        (g,) = ctx.saved_tensors
        device, dtype = ctx.target
        gx = (g * grad_output.detach().to("cpu", torch.float64)).to(device=device, dtype=dtype)
        return gx, None, None, None, None, None, None, None


def ece_kde_loss(probs, labels, bandwidth="auto", p=1, mode="canonical", *, logits=False, weights=None, exact=False):
    """ECE^KDE estimate of CE_p^p as a differentiable scalar tensor.

    probs: (n, K) probabilities (rows on the simplex, entries in (0, 1)), or
    logits with logits=True (the gradient is then with respect to the
    logits: f = softmax(z), or sigmoid for one column). labels: n integers.
    bandwidth: the kernel bandwidth h > 0, or "auto" (leave-one-out maximum
    likelihood on this batch, calib.bandwidth, held constant in the
    gradient). p >= 1: the exponent. mode: canonical, top_label,
    class_wise (the paper's marginal: sum over classes) or binary.
    weights: sample weights (constants). float16 and bfloat16
    probabilities are divided by their row sums where rounding alone keeps
    them off 1 (within 2 K eps). Returns a 0-d tensor of probs' dtype and
    device."""
    if not isinstance(probs, torch.Tensor):
        probs = torch.as_tensor(np.asarray(probs))
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    if isinstance(weights, torch.Tensor):
        weights = weights.detach().cpu().numpy()
    for key, v in (("bandwidth", bandwidth), ("p", p)):
        if not isinstance(v, str) and (isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v))):
            raise ValueError(f"{key}={v!r}: want a finite number" + (" > 0 or 'auto'" if key == "bandwidth" else " >= 1"))
    if isinstance(bandwidth, str):
        if bandwidth != "auto":
            raise ValueError(f"bandwidth {bandwidth!r}: want a number > 0 or 'auto'")
        bw_mode = {"marginal": "class_wise"}.get(mode, mode)
        bandwidth = _api.bandwidth(_widen(probs, logits).numpy(), labels, logits=logits, weights=weights, mode=bw_mode)["bandwidth"]
    return ECEKDELoss.apply(probs, labels, bandwidth, p, mode, logits, exact, weights)
