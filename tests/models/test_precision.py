"""Tests of the CNN engines' memory format and arithmetic precision.

The loop engine runs CNNs on CPU in channels-last (NHWC) layout and, with `precision: bf16`,
under bfloat16 autocast with fp32 master weights. These tests pin what must hold whatever the
kernels: the in-place SGD step is the same arithmetic as the gradient-buffer step; NHWC really
reaches the convolutions; fp32 NHWC differs from NCHW only by summation order; bf16 is
deterministic, keeps fp32 parameters and is actually bf16 (not silently fp32).
"""

from __future__ import annotations

import pytest
import torch

from airfl.core.engine import ClientData, local_sgd
from airfl.models.flat import FlatModel, build_model

IMAGE_SHAPE = (1, 28, 28)
N_CLIENTS, PER_CLIENT, BATCH = 3, 12, 4


def _data(seed: int = 0) -> ClientData:
    g = torch.Generator().manual_seed(seed)
    total = N_CLIENTS * PER_CLIENT
    x = torch.rand(total, *IMAGE_SHAPE, generator=g)
    y = torch.randint(0, 10, (total,), generator=g)
    return ClientData(x, y, torch.arange(total), torch.arange(0, total + 1, PER_CLIENT),
                      torch.full((N_CLIENTS,), PER_CLIENT))


def _model(name="cnn_mnist", memory_format="auto", precision="fp32", l2=0.0, manual=True):
    model = build_model(name, IMAGE_SHAPE, 10, l2=l2, engine="loop", precision=precision)
    model.memory_format = memory_format
    model.manual_step = manual            # False: the autograd step (cnn_step.py otherwise)
    return model


def _round(model, seed=5, steps=3):
    params = model.init(torch.Generator().manual_seed(1))
    return local_sgd(model, params, _data(), steps, BATCH, 0.05,
                     torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("memory_format", ["contiguous", "channels_last"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_in_place_step_is_the_gradient_buffer_step_bit_for_bit(memory_format, precision):
    """The loop engine's per-client in-place update must not change a bit: it replaces
    `params.sub_(lr * grads)` on an [N, d] buffer (what the earlier engine did). The
    autograd step; the hand-written fp32 one is bounded against it below."""
    model = _model(memory_format=memory_format, precision=precision, l2=0.01, manual=False)
    g = torch.Generator().manual_seed(3)
    params = torch.randn(N_CLIENTS, model.dim, generator=g) * 0.05
    x = torch.rand(N_CLIENTS, BATCH, *IMAGE_SHAPE, generator=g)
    y = torch.randint(0, 10, (N_CLIENTS, BATCH), generator=g)
    weights = torch.full((N_CLIENTS, BATCH), 1.0 / BATCH)
    fused, buffered = params.clone(), params.clone()
    model.sgd_step_(fused, x, y, weights, 0.05)
    FlatModel.sgd_step_(model, buffered, x, y, weights, 0.05)
    assert torch.equal(fused, buffered)
    assert not torch.equal(fused, params)


def test_channels_last_reaches_the_convolutions_on_cpu():
    """`auto` on CPU must feed the convolutions NHWC tensors (the measured speed-up comes from
    there); with one input channel NCHW and NHWC strides coincide for conv1, so look at conv2.
    (The autograd step, which calls the module; cnn_step.py converts explicitly.)"""
    seen = {}
    for memory_format in ("auto", "contiguous"):
        model = _model(memory_format=memory_format, manual=False)
        hook = model.module.conv2.register_forward_pre_hook(
            lambda mod, args, key=memory_format: seen.__setitem__(key, args[0]))
        _round(model, steps=1)
        hook.remove()
    assert seen["auto"].is_contiguous(memory_format=torch.channels_last)
    assert not seen["auto"].is_contiguous()
    assert seen["contiguous"].is_contiguous()


@pytest.mark.parametrize("name", ["cnn_mnist", "fedavg_cnn"])
def test_channels_last_fp32_differs_from_nchw_by_summation_order_only(name):
    """Exact fp32 in both layouts: the updates agree to a few fp32 ulps of the largest entry
    (oneDNN sums the convolutions in another order), far below bf16's ~2^-8."""
    nchw = _round(_model(name, "contiguous"))
    nhwc = _round(_model(name, "channels_last"))
    scale = float(nchw.abs().max())
    assert float((nhwc - nchw).abs().max()) <= 1e-5 * scale


def _relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    return float((approx - exact).norm() / exact.norm())


def test_bf16_is_deterministic_keeps_fp32_weights_and_is_really_bf16():
    """bf16 reruns must be byte-identical (the pipeline's rerun check); the update stays fp32
    (master weights); and it must differ from fp32 by bf16 rounding: more than fp32's
    summation-order noise (1e-5 relative), less than 0.1 in relative L2 norm. The upper bound is
    a smoke check against a wrong bf16 path (a gradient of the wrong layer or sign is off by
    order 1), not a precision claim: bf16's unit roundoff 2^-9 with cancellation in the sums
    gives ~0.05 here; whether bf16 trains as well as fp32 is measured on the quick figures."""
    first = _round(_model(precision="bf16"))
    again = _round(_model(precision="bf16"))
    fp32 = _round(_model(precision="fp32"))
    assert first.dtype == torch.float32
    assert torch.equal(first, again)
    assert 1e-5 < _relative_error(first, fp32) < 0.1


def test_bf16_runs_in_the_vmap_engine_too():
    """The CUDA default (vmap) honours the precision as well (checked here on CPU): bf16, not
    fp32, and as close to fp32 as the loop engine's bf16 (same bounds and reasons as above)."""
    model = build_model("cnn_mnist", IMAGE_SHAPE, 10, engine="vmap", precision="bf16")
    vmapped = _round(model, steps=1)
    fp32 = _round(_model(precision="fp32"), steps=1)
    assert vmapped.dtype == torch.float32
    assert 1e-5 < _relative_error(vmapped, fp32) < 0.1


def test_precision_is_validated():
    with pytest.raises(ValueError, match="precision"):
        build_model("cnn_mnist", IMAGE_SHAPE, 10, precision="fp16")
    for name in ("softmax", "mlp32"):
        with pytest.raises(ValueError, match="CNN"):
            build_model(name, IMAGE_SHAPE, 10, precision="bf16")
    assert build_model("softmax", IMAGE_SHAPE, 10, precision="fp32").name == "softmax"


# ------------------------------------------------------------- the option in params.yaml

@pytest.fixture()
def params(repo_root):
    import yaml

    return yaml.safe_load((repo_root / "params.yaml").read_text())


@pytest.mark.parametrize("section", [("dp_perk", "training"), ("cdpb", "fig4"), ("cdpb", "fig8")])
def test_precision_is_declared_fp32_by_default_and_validated(params, section):
    """Every block that trains a model carries `precision` (written in params.yaml, so DVC
    tracks it), fp32 by default; a value outside fp32 | bf16 stops with the key named."""
    from airfl.params.config import ConfigError
    from airfl.pipeline.params import validate_params

    paper, block = section
    assert params[paper][block]["precision"] == "fp32"
    params[paper][block]["precision"] = "fp16"
    with pytest.raises(ConfigError, match=f"{paper}.{block}.precision"):
        validate_params(params)


@pytest.mark.parametrize("experiment_id, section, model", [
    ("dp_perk/fig3a", ("dp_perk", "training"), "fedavg_cnn"),
    ("cdpb/fig4", ("cdpb", "fig4"), "cnn_mnist"),
    ("cdpb/fig8a", ("cdpb", "fig8"), "cnn_mnist")])
def test_precision_reaches_the_model_the_stages_build(params, experiment_id, section, model):
    """The experiment's `precision` is what train and calibrate build (stages.setup.block_model);
    bf16 with a model that has no bf16 path (the quick MLP, softmax) stops with a ConfigError."""
    from airfl.params.config import ConfigError
    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import get_experiment
    from airfl.pipeline.trial import block_model

    paper, block = section
    params[paper][block]["precision"] = "bf16"
    params[paper][block]["model"] = {"quick": model, "paper": model}
    built = block_model(get_experiment(experiment_id).params(validate_params(params)))
    assert built.name == model and built.precision == "bf16"
    params[paper][block]["model"] = {"quick": "softmax" if paper == "cdpb" else "mlp32",
                                     "paper": model}
    with pytest.raises(ConfigError, match="CNN"):
        block_model(get_experiment(experiment_id).params(validate_params(params)))


def test_memory_format_follows_the_measurement_per_network():
    """auto = NHWC only where it was measured faster on CPU (the small CNNs), NCHW for
    ResNet-18-GN (fp32 NHWC measured slower); never NHWC on inputs that are not images."""
    x = torch.rand(2, 3, 32, 32)
    assert not build_model("resnet18_gn", (3, 32, 32), 10)._layout(x).is_contiguous(
        memory_format=torch.channels_last)
    for name in ("cnn_mnist", "fedavg_cnn"):
        model = build_model(name, (3, 32, 32), 10)
        assert model._layout(x).is_contiguous(memory_format=torch.channels_last)
        assert model._layout(x).is_contiguous() is False


def test_vmap_is_not_offered_for_cnns_on_cpu(params):
    """No offered engine is slower than the naive per-client loop: a CNN with
    `engine: vmap` on CPU (measured 0.31-0.61x of that loop) stops at set-up with a ConfigError
    naming the dotted key and the measurement; auto and loop pass, and vmap passes on CUDA."""
    from airfl.params.config import ConfigError
    from airfl.models.flat import check_engine
    from airfl.pipeline.params import validate_params
    from airfl.pipeline.registry import get_experiment
    from airfl.pipeline.trial import block_model

    model = params["baselines"]["accuracy_vs_rounds"]["model"]
    model.update(name="cnn_mnist", engine="vmap")
    experiment = get_experiment("baselines/accuracy_vs_rounds")
    block = experiment.params(validate_params(params))
    with pytest.raises(ConfigError, match=r"baselines\.accuracy_vs_rounds\.model\.engine: .*"
                                          r"not offered on CPU.*0\.61x.*allowed on CPU: auto, loop"):
        block_model(block, torch.device("cpu"), f"{experiment.config_key}.model")  # as curve_inputs
    assert block_model(block).engine == "vmap"             # no device: the CUDA path, testable
    check_engine(block_model(block), "cuda")
    for engine in ("auto", "loop"):
        block["model"]["engine"] = engine
        assert block_model(block, torch.device("cpu")).engine == engine


@pytest.mark.parametrize("name", ["cnn_mnist", "fedavg_cnn", "cnn_mnist_k3", "cnn_mnist_bn"])
def test_hand_written_fp32_step_is_the_autograd_step(name):
    """cnn_step.py's fused fp32 step (what auto runs on CPU for the small CNNs) is the SGD
    step of the loop engine's loss sum_b w_b CE + (l2/2)||theta||^2: per client, unequal sample
    weights and weight decay included, it agrees with autograd's step to fp32 rounding (1e-5 of
    the largest update entry; measured ~2e-6: lr * g is not rounded before the subtraction),
    every client moves, and reruns are bit-identical."""
    model = build_model(name, IMAGE_SHAPE, 10, l2=0.01)
    assert model.manual_step and model.block_order in ("pool_relu", "relu_pool", "pool_bn_relu")
    g = torch.Generator().manual_seed(4)
    params = torch.randn(N_CLIENTS, model.dim, generator=g) * 0.05
    x = torch.rand(N_CLIENTS, BATCH, *IMAGE_SHAPE, generator=g)
    y = torch.randint(0, 10, (N_CLIENTS, BATCH), generator=g)
    weights = torch.rand(N_CLIENTS, BATCH, generator=g) / BATCH
    manual, again, autograd = params.clone(), params.clone(), params.clone()
    model.sgd_step_(manual, x, y, weights, 0.05)
    model.sgd_step_(again, x, y, weights, 0.05)
    model.manual_step = False
    model.sgd_step_(autograd, x, y, weights, 0.05)
    update = autograd - params
    assert torch.equal(manual, again)
    assert bool((update.abs().amax(dim=1) > 0).all())
    assert float((manual - autograd).abs().max()) <= 1e-5 * float(update.abs().max())


def test_batch_norm_cnns_hand_written_step_at_lapas_batch_is_the_autograd_step():
    """LAPA's BatchNorm CNN (`cnn_mnist_bn`, block order pool_bn_relu) at its paper batch
    (220) and a small one: the hand-written fp32 step (BatchNorm by the batch's statistics,
    the ATen kernels autograd calls) agrees with autograd's step within 1e-4 of the largest
    update entry (summation order only), with weight decay and unequal sample weights, and
    moves BatchNorm's scale and shift; bf16 takes autocast's autograd step (no BatchNorm in
    the bf16 hand-written step)."""
    model = build_model("cnn_mnist_bn", IMAGE_SHAPE, 10, l2=0.01)
    slots = {s.name: s for s in model.slots}
    for batch in (220, 7):
        g = torch.Generator().manual_seed(batch)
        params = model.init(g).unsqueeze(0).repeat(2, 1)
        params += 0.05 * torch.randn(2, model.dim, generator=g)
        x = torch.rand(2, batch, *IMAGE_SHAPE, generator=g)
        y = torch.randint(0, 10, (2, batch), generator=g)
        weights = torch.rand(2, batch, generator=g) / batch
        manual, autograd = params.clone(), params.clone()
        model.manual_step = True
        model.sgd_step_(manual, x, y, weights, 0.1)
        model.manual_step = False
        model.sgd_step_(autograd, x, y, weights, 0.1)
        update = autograd - params
        assert float((manual - autograd).abs().max()) <= 1e-4 * float(update.abs().max())
        for name in ("bn.weight", "bn.bias"):
            s = slots[name]
            assert bool(((manual - params)[:, s.start:s.stop].abs().amax(dim=1) > 0).all())
    bf16 = build_model("cnn_mnist_bn", IMAGE_SHAPE, 10, precision="bf16")
    stepped = params.clone()
    bf16.sgd_step_(stepped, x, y, weights, 0.1)            # autocast's step, no error
    assert 1e-5 < _relative_error(stepped - params, manual - params) < 0.5   # bf16, batch 7


def test_hand_written_step_only_where_it_applies():
    """The fused step runs on CPU in channels-last (fp32, and bf16 with its own arithmetic: its
    result differs from fp32's), NCHW takes the autograd step, ResNet-18-GN has no block order
    (autograd)."""
    assert build_model("resnet18_gn", (3, 32, 32), 10).block_order is None
    fp32 = _round(_model())
    bf16 = _round(_model(precision="bf16"))
    assert 1e-5 < _relative_error(bf16, fp32) < 0.1
    nchw = _round(_model(memory_format="contiguous"))
    assert float((nchw - fp32).abs().max()) <= 1e-5 * float(nchw.abs().max())


def _one_step(model, manual, seed=4):
    """One step of N_CLIENTS clients from different parameters, unequal sample weights."""
    g = torch.Generator().manual_seed(seed)
    params = model.init(g).unsqueeze(0).repeat(N_CLIENTS, 1)
    params += 0.01 * torch.randn(N_CLIENTS, model.dim, generator=g)
    x = torch.rand(N_CLIENTS, BATCH, *IMAGE_SHAPE, generator=g)
    y = torch.randint(0, 10, (N_CLIENTS, BATCH), generator=g)
    weights = torch.rand(N_CLIENTS, BATCH, generator=g) / BATCH
    model.manual_step, stepped = manual, params.clone()
    model.sgd_step_(stepped, x, y, weights, 0.05)
    return stepped - params


@pytest.mark.parametrize("name", ["cnn_mnist", "fedavg_cnn", "cnn_mnist_k3"])
def test_fused_bf16_step_is_autocasts_step_up_to_bf16_rounding(name):
    """cnn_step.py's bf16 step (what precision: bf16 runs on CPU for the small CNNs) computes what
    autocast's autograd step computes, except that the linear layers' weight updates are
    accumulated in fp32 instead of being rounded to bf16 first. So the two agree to a few bf16
    roundings (unit roundoff 2^-9 ~ 2e-3; tolerance 1e-2 of the largest update entry, measured
    1.7-2.3e-3), ten times closer to each other than either is to fp32 (measured 0.0017 vs 0.045
    in relative L2), with l2 and unequal sample weights; the update is fp32, every client
    moves, and reruns are bit-identical."""
    model = build_model(name, IMAGE_SHAPE, 10, l2=0.01, engine="loop", precision="bf16")
    fused, again = _one_step(model, True), _one_step(model, True)
    autocast = _one_step(model, False)
    fp32 = _one_step(build_model(name, IMAGE_SHAPE, 10, l2=0.01), True)
    assert fused.dtype == torch.float32 and torch.equal(fused, again)
    assert bool((fused.abs().amax(dim=1) > 0).all())
    assert float((fused - autocast).abs().max()) <= 1e-2 * float(autocast.abs().max())
    assert _relative_error(fused, autocast) <= 0.1 * _relative_error(autocast, fp32)
    assert _relative_error(fused, fp32) > 1e-5                 # really bf16, not fp32


# --- the precision policy: fp32 | tf32 | bf16 (models.apply_precision) ---------------------

@pytest.fixture()
def cuda_flags():
    """Restore torch's global TF32 flags after a test sets them."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
    torch.set_float32_matmul_precision(saved[2])


@pytest.mark.parametrize("precision, tf32", [("fp32", False), ("tf32", True), ("bf16", False)])
def test_a_cuda_device_gets_the_precisions_tf32_flags(cuda_flags, precision, tf32):
    """On CUDA, fp32 is exact (TF32 off, against cuDNN's default on) and tf32 turns it on; the
    flags are set on the torch globals and read back into the run's record (the CUDA path,
    tested by structure on CPU: setting the flags needs no device)."""
    from airfl.models.precision import apply_precision

    torch.backends.cuda.matmul.allow_tf32 = not tf32      # the opposite, to see them change
    torch.backends.cudnn.allow_tf32 = not tf32
    record = apply_precision(precision, torch.device("cuda"))
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cudnn.allow_tf32 is tf32
    assert torch.get_float32_matmul_precision() == ("high" if tf32 else "highest")
    assert record == {"precision": precision, "device": "cuda", "cuda_matmul_allow_tf32": tf32,
                      "cudnn_allow_tf32": tf32,
                      "float32_matmul_precision": "high" if tf32 else "highest"}


def test_on_cpu_fp32_and_bf16_leave_the_flags_and_tf32_is_refused(cuda_flags):
    from airfl.models.precision import apply_precision

    torch.backends.cudnn.allow_tf32 = True
    assert apply_precision("fp32", "cpu") == {"precision": "fp32", "device": "cpu"}
    assert apply_precision("bf16", "cpu") == {"precision": "bf16", "device": "cpu"}
    assert torch.backends.cudnn.allow_tf32 is True
    with pytest.raises(ValueError, match="tf32' is a CUDA arithmetic"):
        apply_precision("tf32", "cpu")
    with pytest.raises(ValueError, match="fp32, tf32, bf16"):
        apply_precision("fp16", "cpu")


def test_a_block_with_tf32_stops_on_cpu_naming_the_key(cuda_flags):
    from airfl.params.config import ConfigError
    from airfl.pipeline.trial import block_model

    block = {"dataset": "mnist", "model": {"name": "cnn_mnist", "l2": 0.0, "engine": "auto",
                                           "precision": "tf32"}}
    with pytest.raises(ConfigError, match=r"^lapa.training.model.precision: precision 'tf32'"):
        block_model(block, torch.device("cpu"), "lapa.training.model")
    block["model"]["precision"] = "fp32"
    assert block_model(block, torch.device("cpu")).precision == "fp32"


def test_tf32_is_fp32_in_the_model(cuda_flags):
    """tf32 changes only CUDA's matmul units: the model's own arithmetic is fp32, so on the
    same device the same step gives the same bits (here on CPU, where no TF32 exists)."""
    fp32 = build_model("cnn_mnist", (1, 28, 28), 10, precision="fp32")
    tf32 = build_model("cnn_mnist", (1, 28, 28), 10, precision="tf32")
    softmax = build_model("softmax", (1, 28, 28), 10, precision="tf32")     # allowed: fp32 math
    assert softmax.dim == 7850
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2 * 8, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (16,), generator=gen)
    data = ClientData(x, y, torch.arange(16), torch.tensor([0, 8, 16]), torch.tensor([8, 8]))
    params = fp32.init(torch.Generator().manual_seed(1))
    a = local_sgd(fp32, params, data, 2, 4, 0.1, torch.Generator().manual_seed(2))
    b = local_sgd(tf32, params, data, 2, 4, 0.1, torch.Generator().manual_seed(2))
    assert torch.equal(a, b)
