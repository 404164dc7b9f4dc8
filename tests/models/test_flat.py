"""Tests of airfl.models.flat: batched per-client losses/gradients against torch.autograd on nn.Modules."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from airfl.models.flat import MODEL_NAMES, FedAvgCNN, MnistCNN, build_model

IMAGE_SHAPE = (1, 28, 28)
N_CLIENTS = 3
BATCH = 5


def _client_batches(seed: int, dtype=torch.float64):
    """Different data per client and non-uniform per-sample weights (one padded sample masked)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(N_CLIENTS, BATCH, *IMAGE_SHAPE, generator=g, dtype=dtype)
    y = torch.randint(0, 10, (N_CLIENTS, BATCH), generator=g)
    weights = torch.rand(N_CLIENTS, BATCH, generator=g, dtype=dtype)
    weights[0, -1] = 0.0
    return x, y, weights


def _reference(module: nn.Module, x, y, weights, l2: float, flat: torch.Tensor):
    """Weighted cross-entropy (+ l2/2 ||w||^2) and its autograd gradient w.r.t. module params."""
    module.zero_grad()
    out = module(x)
    loss = (weights * nn.functional.cross_entropy(out, y, reduction="none")).sum()
    if l2:
        loss = loss + 0.5 * l2 * (flat * flat).sum()
    loss.backward()
    return loss.detach()


@pytest.mark.parametrize("l2", [0.0, 0.01])
def test_softmax_matches_autograd(l2):
    model = build_model("softmax", IMAGE_SHAPE, 10, l2=l2)
    g = torch.Generator().manual_seed(3)
    params = 0.1 * torch.randn(N_CLIENTS, model.dim, generator=g, dtype=torch.float64)
    x, y, weights = _client_batches(1)
    losses, grads = model.loss_and_grads(params, x, y, weights)
    assert losses.shape == (N_CLIENTS,) and grads.shape == (N_CLIENTS, model.dim)
    for n in range(N_CLIENTS):
        linear = nn.Linear(784, 10).double()
        w = params[n].view(10, 785)  # class-major blocks [pixel weights, bias]
        with torch.no_grad():
            linear.weight.copy_(w[:, :-1])
            linear.bias.copy_(w[:, -1])
        flat = torch.cat([linear.weight, linear.bias.unsqueeze(1)], dim=1).reshape(-1)
        loss = _reference(linear, x[n].flatten(1), y[n], weights[n], l2, flat)
        grad = torch.cat([linear.weight.grad, linear.bias.grad.unsqueeze(1)], dim=1).reshape(-1)
        torch.testing.assert_close(losses[n], loss, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(grads[n], grad, rtol=1e-10, atol=1e-12)
    # clients with different data get different gradients
    assert not torch.allclose(grads[0], grads[1])


@pytest.mark.parametrize("engine", ["vmap", "loop", "auto"])
@pytest.mark.parametrize("l2", [0.0, 0.01])
def test_cnn_mnist_matches_autograd(engine, l2):
    model = build_model("cnn_mnist", IMAGE_SHAPE, 10, l2=l2, engine=engine)
    params = torch.stack([model.init(torch.Generator().manual_seed(s))
                          for s in range(N_CLIENTS)]).double()
    x, y, weights = _client_batches(2)
    losses, grads = model.loss_and_grads(params, x, y, weights)
    assert losses.shape == (N_CLIENTS,) and grads.shape == (N_CLIENTS, model.dim)
    for n in range(N_CLIENTS):
        module = MnistCNN().double()
        torch.nn.utils.vector_to_parameters(params[n], module.parameters())
        flat = torch.nn.utils.parameters_to_vector(module.parameters())
        loss = _reference(module, x[n], y[n], weights[n], l2, flat)
        grad = torch.cat([p.grad.reshape(-1) for p in module.parameters()])
        torch.testing.assert_close(losses[n], loss, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(grads[n], grad, rtol=1e-9, atol=1e-12)
    assert not torch.allclose(grads[0], grads[1])


def test_cnn_engines_agree_float32():
    vmap_model = build_model("cnn_mnist", IMAGE_SHAPE, 10, engine="vmap")
    loop_model = build_model("cnn_mnist", IMAGE_SHAPE, 10, engine="loop")
    params = torch.stack([vmap_model.init(torch.Generator().manual_seed(10 + s))
                          for s in range(N_CLIENTS)])
    x, y, weights = _client_batches(4, dtype=torch.float32)
    loss_v, grad_v = vmap_model.loss_and_grads(params, x, y, weights)
    loss_l, grad_l = loop_model.loss_and_grads(params, x, y, weights)
    torch.testing.assert_close(loss_v, loss_l, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad_v, grad_l, rtol=1e-4, atol=1e-6)


def test_build_model_rejects_unknown_names():
    with pytest.raises(ValueError) as info:
        build_model("resnet1000", IMAGE_SHAPE, 10)
    message = str(info.value)
    assert "resnet1000" in message
    for name in MODEL_NAMES:
        assert name in message
    with pytest.raises(ValueError, match="engine"):
        build_model("cnn_mnist", IMAGE_SHAPE, 10, engine="jit")


def test_parameter_counts():
    assert build_model("softmax", IMAGE_SHAPE, 10).dim == 7850
    cnn = build_model("cnn_mnist", IMAGE_SHAPE, 10)
    assert cnn.dim == 21_840 == sum(p.numel() for p in MnistCNN().parameters())
    fedavg = build_model("fedavg_cnn", IMAGE_SHAPE, 10)
    assert fedavg.dim == 582_026 == sum(p.numel() for p in FedAvgCNN().parameters())
    # ResNet-18 (CIFAR form) has 11,173,962 parameters with BatchNorm; GroupNorm has the same
    # affine parameters, so the count is the same
    assert build_model("resnet18_gn", (3, 32, 32), 10).dim == 11_173_962


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_init_is_deterministic(name):
    model = build_model(name, IMAGE_SHAPE, 10)
    a = model.init(torch.Generator().manual_seed(5))
    b = model.init(torch.Generator().manual_seed(5))
    assert a.shape == (model.dim,) and a.dtype == torch.float32
    assert torch.equal(a, b)
    if name != "softmax":  # softmax starts at zero; CNNs draw from the generator
        c = model.init(torch.Generator().manual_seed(6))
        assert not torch.equal(a, c)
        assert torch.isfinite(a).all() and a.abs().max() <= 1.0


def test_logits_of_many_models_match_one_at_a_time():
    from airfl.models.flat import SoftmaxRegression, build_model

    x = torch.randn(9, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    for model in (SoftmaxRegression(784, 10), build_model("cnn_mnist", (1, 28, 28), 10)):
        params = torch.randn(3, model.dim, generator=torch.Generator().manual_seed(5)) * 0.05
        many = model.logits_many(params, x)
        assert many.shape == (3, 9, 10)
        for e in range(3):
            assert torch.allclose(many[e], model.logits(params[e], x), atol=1e-5)


def test_lapa_cnn_has_the_papers_batch_norm_layer():
    """LAPA Sec. V-A: two conv layers each followed by a 2x2 max pool, then a BatchNorm layer,
    FC(50), ReLU, softmax output: `cnn_mnist_bn` has BatchNorm2d(20) after the second pool
    (21,880 parameters: 40 more), without running statistics, initialised as PyTorch does
    (scale 1, shift 0); `cnn_mnist` is left as it was."""
    model = build_model("cnn_mnist_bn", IMAGE_SHAPE, 10)
    bn = model.module.bn
    assert isinstance(bn, torch.nn.BatchNorm2d) and bn.num_features == 20
    assert not bn.track_running_stats and not list(model.module.buffers())
    assert model.dim == 21_880 == build_model("cnn_mnist", IMAGE_SHAPE, 10).dim + 40
    names = [s.name for s in model.slots]
    assert names.index("bn.weight") == names.index("conv2.bias") + 1      # after conv2
    w0 = model.init(torch.Generator().manual_seed(3))
    by_name = model.unflatten(w0)
    assert torch.equal(by_name["bn.weight"], torch.ones(20))
    assert torch.equal(by_name["bn.bias"], torch.zeros(20))
    plain = build_model("cnn_mnist", IMAGE_SHAPE, 10)
    assert plain.module.bn is None and plain.block_order == "pool_relu"   # its hand step
    assert model.block_order == "pool_bn_relu"                             # its hand step
    # the layer acts: the batch's statistics normalise the pooled maps (scale 2 doubles them)
    x = torch.randn(8, *IMAGE_SHAPE, generator=torch.Generator().manual_seed(0))
    scaled = dict(by_name)
    scaled["bn.weight"] = 2 * torch.ones(20)
    flat = torch.cat([scaled[s.name].reshape(-1) for s in model.slots])
    assert not torch.allclose(model.logits(w0, x), model.logits(flat, x))


def test_lapa_cnn_trains_and_evaluates_in_batches_of_1000():
    """Its gradients are autograd's through the BatchNorm layer (the loop engine), and a test
    set is evaluated in chunks of 1,000 images (the batch statistics of each chunk)."""
    from airfl.core.engine import evaluate_many

    model = build_model("cnn_mnist_bn", IMAGE_SHAPE, 10, engine="loop")
    params = torch.stack([model.init(torch.Generator().manual_seed(s))
                          for s in range(N_CLIENTS)]).double()
    x, y, weights = _client_batches(4)
    losses, grads = model.loss_and_grads(params, x, y, weights)
    module = MnistCNN(batch_norm=True).double()
    torch.nn.utils.vector_to_parameters(params[0], module.parameters())
    flat = torch.nn.utils.parameters_to_vector(module.parameters())
    loss = _reference(module, x[0], y[0], weights[0], 0.0, flat)
    torch.testing.assert_close(losses[0], loss, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(grads[0], torch.cat([p.grad.reshape(-1)
                                                    for p in module.parameters()]),
                               rtol=1e-9, atol=1e-12)
    assert model.eval_batch == 1000
    n = 2500
    images = torch.randn(n, *IMAGE_SHAPE, generator=torch.Generator().manual_seed(1))
    labels = torch.randint(0, 10, (n,), generator=torch.Generator().manual_seed(2))
    w = params[:1].float()
    loss_all, acc_all = evaluate_many(model, w, images, labels)
    chunks = [(images[i:i + 1000], labels[i:i + 1000]) for i in range(0, n, 1000)]
    ce = sum(torch.nn.functional.cross_entropy(model.logits(w[0], a).double(), b,
                                               reduction="sum") for a, b in chunks) / n
    torch.testing.assert_close(loss_all[0], ce, rtol=1e-6, atol=1e-8)


def test_batch_statistics_models_are_the_ones_normalised_by_their_batch():
    """BATCH_STATISTICS_MODELS (read by `airfl plan` without building a model) names exactly
    the networks whose logits depend on the batch, and no other network's do."""
    from airfl.models.flat import BATCH_STATISTICS_MODELS, MODEL_NAMES
    x = torch.rand(6, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    for name in MODEL_NAMES:
        if name in ("softmax", "mlp32"):
            assert name not in BATCH_STATISTICS_MODELS
            continue
        shape = (3, 32, 32) if name.startswith("resnet") else (1, 28, 28)
        model = build_model(name, shape, 10)
        assert model.batch_statistics == (name in BATCH_STATISTICS_MODELS), name
        if shape[0] == 1:
            params = model.init(torch.Generator().manual_seed(1))
            whole = model.logits(params, x)
            halves = torch.cat([model.logits(params, x[:3]), model.logits(params, x[3:])])
            gap = float((whole - halves).abs().max())      # kernels by batch size: ~1e-8
            assert (gap > 1e-4) if model.batch_statistics else (gap < 1e-6), (name, gap)
