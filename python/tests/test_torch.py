"""calib.torch.ece_kde_loss: value and gradient against the paper code's
autograd (golden case c13: 16 gradients with respect to probabilities and
logits), against central finite differences (torch.autograd.gradcheck), and
in a training step."""

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import calib.torch as ct  # noqa: E402
from conftest import GOLDEN  # noqa: E402


def golden():
    with open(os.path.join(GOLDEN, "c13_n24_k3_grad.json")) as f:
        g = json.load(f)
    rows = np.loadtxt(os.path.join(GOLDEN, "c13_n24_k3_grad.csv"), delimiter=",", skiprows=1)
    return g, rows[:, :-1], rows[:, -1].astype(np.int64), np.array(g["input"]["logits"], dtype=np.float64)


CASES = golden()[0]["gradients"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['mode']}-p{c['p']}-h{c['bandwidth']}" for c in CASES])
def test_golden_gradients(case):
    """max |ours - paper| <= 1e-7 max |paper| for the gradients, 1e-9
    relative for the values (the Go golden test's tolerances)."""
    _, p, y, z = golden()
    mode = {"marginal": "class_wise"}.get(case["mode"].replace("_logspace", ""), case["mode"].replace("_logspace", ""))
    for x, logits, ref in ((p, False, case["probabilities"]), (z, True, case["logits"])):
        t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
        loss = ct.ece_kde_loss(t, torch.tensor(y), bandwidth=case["bandwidth"], p=case["p"], mode=mode, logits=logits)
        loss.backward()
        assert abs(loss.item() - ref["value"]) <= 1e-9 * abs(ref["value"])
        want = np.array(ref["grad"])
        assert np.max(np.abs(t.grad.numpy() - want)) <= 1e-7 * np.max(np.abs(want))


@pytest.mark.parametrize("mode", ["canonical", "top_label", "class_wise"])
@pytest.mark.parametrize("p", [1, 2])
def test_gradcheck_finite_differences(mode, p):
    """torch.autograd.gradcheck: the backward against central differences
    of the forward (float64; logits, so every perturbation stays inside the
    simplex)."""
    rng = np.random.default_rng(5)
    z = torch.tensor(rng.normal(size=(30, 4)), dtype=torch.float64, requires_grad=True)
    y = rng.integers(0, 4, size=30)
    fn = lambda z: ct.ece_kde_loss(z, y, bandwidth=0.3, p=p, mode=mode, logits=True)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (z,), eps=1e-6, atol=1e-7, rtol=1e-4)


def test_float32_and_scaled_upstream_gradient():
    rng = np.random.default_rng(6)
    z = torch.tensor(rng.normal(size=(40, 3)), dtype=torch.float32, requires_grad=True)
    y = torch.tensor(rng.integers(0, 3, size=40))
    loss = ct.ece_kde_loss(z, y, bandwidth=0.2, logits=True)
    assert loss.dtype == torch.float32 and loss.dim() == 0
    (3 * loss).backward()
    g3 = z.grad.clone()
    z.grad = None
    ct.ece_kde_loss(z, y, bandwidth=0.2, logits=True).backward()
    assert z.grad.dtype == torch.float32
    assert torch.allclose(g3, 3 * z.grad)


def test_auto_bandwidth_is_calib_bandwidth():
    import calib

    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(3), size=200)
    y = rng.integers(0, 3, size=200)
    h = calib.bandwidth(p, y)["bandwidth"]
    a = ct.ece_kde_loss(torch.tensor(p), y).item()
    b = ct.ece_kde_loss(torch.tensor(p), y, bandwidth=h).item()
    assert a == b
    # The value is calib eval's ece_kde at that bandwidth.
    assert a == calib.ece_kde(p, y, bandwidth=h)


def test_training_step_lowers_the_loss():
    """A few steps of gradient descent on temperature-scaled logits lower
    the calibration loss (the paper's use: ECE^KDE as a regulariser)."""
    rng = np.random.default_rng(8)
    y = rng.integers(0, 5, size=300)
    base = rng.normal(size=(300, 5))
    base[np.arange(300), y] += 1.5
    z = torch.tensor(4.0 * base)  # over-confident
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.SGD([log_t], lr=0.5)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = ct.ece_kde_loss(z / torch.exp(log_t), y, bandwidth=0.1, mode="top_label", logits=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0] and log_t.item() > 0.2


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="row 1"):
        ct.ece_kde_loss(torch.tensor([[0.5, 0.7], [0.5, 0.5]]), [0, 1], bandwidth=0.1)
    with pytest.raises(ValueError, match="bandwidth"):
        ct.ece_kde_loss(torch.tensor([[0.5, 0.5], [0.5, 0.5]]), [0, 1], bandwidth=-1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensor_moved_and_gradient_moved_back():
    """A GPU tensor: the loss is on its device and dtype, and the gradient
    comes back there, equal to the CPU gradient."""
    rng = np.random.default_rng(9)
    z = rng.normal(size=(500, 10))
    y = rng.integers(0, 10, size=500)
    for dtype in (torch.float32, torch.float64):
        zc = torch.tensor(z, dtype=dtype, device="cuda", requires_grad=True)
        loss = ct.ece_kde_loss(zc, torch.tensor(y, device="cuda"), bandwidth=0.1, logits=True)
        assert loss.device.type == "cuda" and loss.dtype == dtype
        loss.backward()
        assert zc.grad.device.type == "cuda" and zc.grad.dtype == dtype
        zh = torch.tensor(z, dtype=dtype, requires_grad=True)
        ct.ece_kde_loss(zh, y, bandwidth=0.1, logits=True).backward()
        assert torch.equal(zc.grad.cpu(), zh.grad)
        assert loss.item() == ct.ece_kde_loss(zh, y, bandwidth=0.1, logits=True).item()
