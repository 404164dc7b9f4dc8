"""Models as flat parameter vectors, with per-client losses and gradients for all clients at once.

The simulator keeps the global model as one vector [d] and the clients' models as one tensor
[N, d]. A `FlatModel` computes per-client losses and gradients on a batch
x[N, B, ...], y[N, B] with per-sample weights [N, B] (1/B for a mini-batch, mask/|D_m| for a
padded full batch), so that aggregation and local training never loop over clients in Python
where a batched form is faster.

Softmax regression has a closed-form batched gradient (einsum). For CNNs, two engines are
available: `vmap` (torch.func over clients) and `loop` (one functional call per client on
views of the [N, d] tensor); the loop measures faster on CPU for small CNNs, so `auto` picks
the loop there and vmap on CUDA. benchmarks/engine.py measures both.

The small CNNs (MnistCNN, FedAvgCNN) run on CPU in the channels-last memory format (NHWC),
which oneDNN's convolution and max-pooling kernels prefer: benchmarks/README.md measured it
faster than NCHW at the batch sizes the papers use (same fp32 arithmetic, other summation order:
results agree with NCHW to ~1e-7 relative, not bit for bit); ResNet-18-GN stays NCHW (NHWC was
slower in fp32). The small CNNs' CPU step is cnn_step.py's hand-written, fused backward
(measured faster than autograd; same loss, ~1e-6 of an update in fp32). `precision: bf16` runs
forward and backward in bfloat16 (cnn_step's bf16 step for the small CNNs on CPU, autocast
otherwise) with fp32 master weights, loss, SGD update and evaluation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from airfl.models import cnn_step
from airfl.models.precision import PRECISIONS
from airfl.models.softmax_rows import gather_class_columns, write_gradient_rows
from airfl.models.networks import (  # noqa: F401 (airfl.models.flat names every network)
    FedAvgCNN,
    MnistCNN,
    ResNet18,
    ResNet18GN,
    batch_norm_without_stats,
    resnet18_bn,
)


class FlatModel:
    """Interface: a model whose parameters are one flat vector."""

    name: str
    dim: int
    num_classes: int
    # rows per evaluation forward (core.engine.evaluate_many): the linear models' batched GEMM
    # measured fastest on whole sets (benchmarks/eval_chunks.py: 4,096 rows 1.1x faster than
    # 256 for a batch of 64 softmax snapshots); networks override it
    eval_chunk: int = 4096

    def init(self, generator: torch.Generator) -> torch.Tensor:
        raise NotImplementedError

    def loss_and_grads(self, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                       weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-client weighted loss [N] and gradient [N, d] at params [N, d]."""
        raise NotImplementedError

    def logits(self, params: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits [n, C] of one model params [d] on inputs x [n, ...]."""
        raise NotImplementedError

    def logits_many(self, params: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Logits [E, n, C] of E models params [E, d] on the same inputs (evaluation of many
        snapshots at once; models with a batched form override it)."""
        return torch.stack([self.logits(p, x) for p in params])

    def penalty(self, params: torch.Tensor) -> torch.Tensor:
        """The regulariser (l2/2)||w||^2 of each row of params [..., d], part of every loss."""
        return 0.5 * getattr(self, "l2", 0.0) * (params * params).sum(dim=-1)

    def sgd_step_(self, params: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                  weights: torch.Tensor, lr: float) -> None:
        """One SGD step of every client in place: params [N, d] -= lr * gradient. Models that
        can update client by client override it (no [N, d] gradient buffer)."""
        _, grads = self.loss_and_grads(params, x, y, weights)
        params.sub_(lr * grads)


class SoftmaxRegression(FlatModel):
    """Multinomial logistic regression with bias and an optional L2 term (mu/2)||w||^2.

    Parameter layout follows Biased FL: class-major blocks w = [w^(0); ...; w^(C-1)],
    each block = [pixel weights, bias], so d = C (p + 1) (7850 for MNIST).
    The gradient of the weighted cross-entropy is (softmax - onehot)^T x, batched by einsum.
    """

    def __init__(self, input_dim: int, num_classes: int, l2: float = 0.0):
        self.name = "softmax"
        self.input_dim = int(input_dim)
        self.num_classes = int(num_classes)
        self.dim = self.num_classes * (self.input_dim + 1)
        self.l2 = float(l2)

    def init(self, generator: torch.Generator) -> torch.Tensor:
        return torch.zeros(self.dim)

    def _flatten(self, x: torch.Tensor) -> torch.Tensor:
        """Flatten images [..., C, H, W] to [..., p]."""
        return x if x.shape[-1] == self.input_dim and x.dim() <= 3 else x.flatten(start_dim=-3)

    def loss_and_grads(self, params, x, y, weights):
        n_clients = params.shape[0]
        w = params.view(n_clients, self.num_classes, self.input_dim + 1)
        flat = self._flatten(x)                                       # [N, B, p]
        # The bias is the weight of a constant-1 feature; it is added (baddbmm), not
        # concatenated, so no [N, B, p + 1] copy of the inputs is made per call.
        logits = torch.baddbmm(w[..., -1].unsqueeze(1), flat, w[..., :-1].transpose(1, 2))
        log_prob = torch.log_softmax(logits, dim=-1)
        picked = log_prob.gather(-1, y.unsqueeze(-1)).squeeze(-1)    # [N, B]
        loss = -(weights * picked).sum(dim=1)
        residual = log_prob.exp_()                                    # softmax - onehot
        residual.scatter_add_(-1, y.unsqueeze(-1), -torch.ones_like(picked).unsqueeze(-1))
        residual.mul_(weights.unsqueeze(-1))
        grad = torch.cat([torch.bmm(residual.transpose(1, 2), flat),
                          residual.sum(dim=1).unsqueeze(-1)], dim=-1).view(n_clients, self.dim)
        if self.l2:
            loss = loss + self.penalty(params)
            grad.add_(params, alpha=self.l2)
        return loss, grad

    def grads_rows(self, params, x, y, weights, rows=None):
        """Gradients [J, N, d] of J global models params [J, d] on every client's batch x
        [N, B, ...] (shared by the models: full-batch gradients), computed client by client
        with only (i) the models j with rows[j, m] (bool [J, N]; None: all; the other rows
        are 0) and (ii) the client's non-zero input columns (`_client_columns`: a pixel that
        is 0 in all of a client's samples adds exactly 0 to its logits and to its gradient
        but for the l2 term). The loss_and_grads math, the J models side by side in one GEMM
        per client and direction: logits^T [C J_m, B] = W [C J_m, p_m] x^T, then
        (softmax - onehot) w, then its product with x [B, p_m], instead of J GEMMs with C = 10
        rows each (a shape the BLAS handles poorly). Rows are class-major (c J_m + j): the
        softmax then reduces over the outer axis of a [C, J_m B] block, ~5x faster than over
        a strided class axis and 17-21x faster than over a last axis of 10 (benchmarks/README.md).
        Around the GEMMs, the weights' gather and the rows' write-back are compiled loops
        (`airfl.models.softmax_rows`). Why client by client: Biased
        FL's one-class MNIST clients use 330-477 of 784 pixels and its digital baselines read
        K of N uploads, so the GEMMs that were half of a digital tune job shrink to about a
        third (benchmarks/client_gradients.py)."""
        n_models = params.shape[0]
        classes = self.num_classes
        columns, inputs, onehots = self._client_columns(x, y)
        params = params.contiguous()
        grad = torch.empty(n_models, x.shape[0], self.dim, dtype=params.dtype)
        grad_np, params_np = grad.numpy(), params.numpy()
        l2 = params_np.dtype.type(self.l2)
        every = torch.arange(n_models).numpy()
        for m, (cols, xm, onehot) in enumerate(zip(columns, inputs, onehots)):
            models = every if rows is None else rows[:, m].nonzero()[:, 0].numpy()  # ascending
            j = models.shape[0]
            if j == 0:                                              # every row 0
                write_gradient_rows(grad_np, m, models, params_np, l2,
                                    np.empty((0, 0), dtype=params_np.dtype),
                                    np.empty(0, dtype=params_np.dtype), cols, classes)
                continue
            weight = torch.empty(classes * j, cols.shape[0], dtype=params.dtype)
            bias = torch.empty(classes * j, 1, dtype=params.dtype)
            gather_class_columns(params_np, models, cols, classes, weight.numpy(),
                                 bias.numpy()[:, 0])
            logits = torch.addmm(bias, weight, xm.T)                               # [C J_m, B]
            residual = torch.softmax(logits.view(classes, -1), dim=0).view(classes, j, -1)
            residual.sub_(onehot).mul_(weights[m])                  # (softmax - onehot) w
            flat = residual.view(classes * j, -1)
            write_gradient_rows(grad_np, m, models, params_np, l2, (flat @ xm).numpy(),
                                flat.sum(dim=1).numpy(), cols, classes)
        return grad

    def _client_columns(self, x, y):
        """Per client, the indices of the input columns that are non-zero in some sample
        (int64 numpy), the inputs restricted to them ([B, p_m] contiguous) and the one-hot
        labels [C, 1, B], made once per batch (the full batch is the same object every
        round)."""
        cached = getattr(self, "_columns_of", None)
        if cached is None or cached[0] is not x or cached[1] is not y:
            flat = self._flatten(x)
            columns = [flat[m].ne(0).any(dim=0).nonzero()[:, 0] for m in range(flat.shape[0])]
            inputs = [flat[m].index_select(1, cols).contiguous()
                      for m, cols in enumerate(columns)]
            onehots = [torch.nn.functional.one_hot(y[m], self.num_classes).T.unsqueeze(1)
                       .to(flat.dtype) for m in range(flat.shape[0])]
            cached = self._columns_of = (x, y, [c.numpy() for c in columns], inputs, onehots)
        return cached[2], cached[3], cached[4]

    def logits(self, params, x):
        w = params.view(self.num_classes, self.input_dim + 1)
        return torch.addmm(w[:, -1], self._flatten(x), w[:, :-1].T)

    def logits_many(self, params, x):
        """One GEMM [n, p] x [p, E C] for all E models (far better use of the BLAS than E
        products with C = 10 columns each)."""
        n_models = params.shape[0]
        w = params.reshape(n_models * self.num_classes, self.input_dim + 1)
        out = torch.addmm(w[:, -1], self._flatten(x), w[:, :-1].T)          # [n, E C]
        return out.view(-1, n_models, self.num_classes).transpose(0, 1)


class TwoLayerMLP(FlatModel):
    """MLP input -> hidden -> ReLU -> classes (DP as a perk's quick model: 784-32-10,
    d = 25,450), batched over clients with hand-written gradients (one bmm per layer and
    direction for all clients, like SoftmaxRegression). Parameter layout and initialisation are
    those of nn.Sequential(Linear, ReLU, Linear): fc1.weight [h, p], fc1.bias, fc2.weight [C, h],
    fc2.bias, each uniform in +-1/sqrt(fan_in) (PyTorch's default)."""

    def __init__(self, input_dim: int, hidden: int, num_classes: int, l2: float = 0.0):
        self.name = f"mlp{hidden}"
        self.input_dim, self.hidden, self.num_classes = int(input_dim), int(hidden), int(num_classes)
        self.shapes = ((hidden, input_dim), (hidden,), (num_classes, hidden), (num_classes,))
        self.fans = (input_dim, input_dim, hidden, hidden)
        self.dim = sum(math.prod(s) for s in self.shapes)
        self.l2 = float(l2)

    def init(self, generator: torch.Generator) -> torch.Tensor:
        chunks = []
        for shape, fan in zip(self.shapes, self.fans):
            noise = torch.rand(math.prod(shape), generator=generator, dtype=torch.float64)
            chunks.append((noise * 2 - 1) / math.sqrt(fan))
        return torch.cat(chunks).to(torch.float32)

    def _split(self, params: torch.Tensor):
        lead, out, start = params.shape[:-1], [], 0
        for shape in self.shapes:
            size = math.prod(shape)
            out.append(params[..., start:start + size].view(*lead, *shape))
            start += size
        return out

    def _flatten(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.shape[-1] == self.input_dim and x.dim() <= 3 else x.flatten(start_dim=-3)

    def loss_and_grads(self, params, x, y, weights):
        w1, b1, w2, b2 = self._split(params)
        flat = self._flatten(x)                                            # [N, B, p]
        hidden = torch.baddbmm(b1.unsqueeze(1), flat, w1.transpose(1, 2)).clamp_(min=0)
        logits = torch.baddbmm(b2.unsqueeze(1), hidden, w2.transpose(1, 2))
        log_prob = torch.log_softmax(logits, dim=-1)
        picked = log_prob.gather(-1, y.unsqueeze(-1)).squeeze(-1)
        loss = -(weights * picked).sum(dim=1)
        residual = log_prob.exp_()                                          # softmax - onehot
        residual.scatter_add_(-1, y.unsqueeze(-1), -torch.ones_like(picked).unsqueeze(-1))
        residual.mul_(weights.unsqueeze(-1))                                # dL/dlogits
        back = torch.bmm(residual, w2).mul_(hidden > 0)                     # dL/d(pre-ReLU)
        grad = torch.cat([torch.bmm(back.transpose(1, 2), flat).flatten(1), back.sum(dim=1),
                          torch.bmm(residual.transpose(1, 2), hidden).flatten(1),
                          residual.sum(dim=1)], dim=1)
        if self.l2:
            loss = loss + self.penalty(params)
            grad.add_(params, alpha=self.l2)
        return loss, grad

    def logits(self, params, x):
        return self.logits_many(params.unsqueeze(0), x)[0]

    def logits_many(self, params, x):
        w1, b1, w2, b2 = self._split(params)
        flat = self._flatten(x)
        hidden = torch.baddbmm(b1.unsqueeze(1), flat.expand(params.shape[0], -1, -1),
                               w1.transpose(1, 2)).clamp_(min=0)
        return torch.baddbmm(b2.unsqueeze(1), hidden, w2.transpose(1, 2))


@dataclass(frozen=True)
class _Slot:
    name: str
    shape: tuple[int, ...]
    start: int
    stop: int


def _widened(logits: torch.Tensor) -> torch.Tensor:
    """bf16 logits (autocast) as fp32 for the loss; fp32 and fp64 logits as they are."""
    return logits.float() if logits.dtype in (torch.bfloat16, torch.float16) else logits


MEMORY_FORMATS = ("auto", "contiguous", "channels_last")


class FunctionalNetwork(FlatModel):
    """Any `nn.Module` driven through torch.func on flat parameter vectors.

    `precision`: fp32 (exact, default), tf32 (fp32 here; TF32 tensor-core matmuls on CUDA,
    `apply_precision`) or bf16 (forward and backward in bfloat16: cnn_step's bf16 step for the
    small CNNs on CPU, autocast otherwise; the parameters, the loss and the SGD update stay
    fp32). `memory_format` of
    the loop engine's conv inputs: auto = channels-last on CPU for the networks measured faster
    in it (their `channels_last_on_cpu`; benchmarks/README.md), contiguous otherwise."""

    def __init__(self, name: str, module: nn.Module, num_classes: int, engine: str = "auto",
                 l2: float = 0.0, precision: str = "fp32", memory_format: str = "auto"):
        if engine not in ("auto", "vmap", "loop"):
            raise ValueError(f"engine must be one of auto, vmap, loop; got {engine!r}")
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
        if memory_format not in MEMORY_FORMATS:
            raise ValueError(f"memory_format must be one of {', '.join(MEMORY_FORMATS)}; "
                             f"got {memory_format!r}")
        self.name = name
        self.module = module
        self.num_classes = num_classes
        self.engine = engine
        self.precision = precision
        self.memory_format = memory_format
        self.channels_last_on_cpu = bool(getattr(module, "channels_last_on_cpu", False))
        self.block_order = getattr(module, "block_order", None)   # cnn_step.py can step it
        # evaluation batch of a network whose outputs use the batch's statistics (BatchNorm
        # without running statistics); None: any chunking gives the same logits, and it is
        # evaluated in chunks of `eval_chunk` rows: 256, the size measured fastest for the
        # papers' CNNs (benchmarks/eval_chunks.py: 1.6-2.4x faster than 4,096 rows on one CPU
        # thread, the convolutions' buffers staying in cache; the same accuracies and losses)
        self.eval_batch = getattr(module, "eval_batch", None)
        # whether a sample's logits depend on the batch it is forwarded in (BatchNorm on the
        # batch's statistics); without, any chunking gives the same logits
        self.batch_statistics = any(isinstance(layer, nn.modules.batchnorm._BatchNorm)
                                    for layer in module.modules())
        self.eval_chunk = 256
        self.manual_step = True        # False: the autograd step (benchmarks, tests compare)
        self.l2 = float(l2)
        slots, start = [], 0
        for pname, tensor in module.named_parameters():
            slots.append(_Slot(pname, tuple(tensor.shape), start, start + tensor.numel()))
            start += tensor.numel()
        self.slots = tuple(slots)
        self.dim = start

    def init(self, generator: torch.Generator) -> torch.Tensor:
        """PyTorch's default initialisation (kaiming-uniform weights, fan-in uniform biases),
        drawn from `generator` so that it is reproducible; the parameters the module
        initialises to a constant (its `constant_init`, e.g. BatchNorm's scale 1 and shift 0)
        take that constant and draw nothing."""
        constant = self.module.constant_init() if hasattr(self.module, "constant_init") else {}
        chunks = []
        for slot in self.slots:
            if slot.name in constant:
                chunks.append(torch.full((slot.stop - slot.start,), constant[slot.name],
                                         dtype=torch.float64))
                continue
            bound = 1.0 / math.sqrt(math.prod(self._fan_shape(slot)))  # kaiming_uniform(a=sqrt(5))
            noise = torch.rand(slot.stop - slot.start, generator=generator, dtype=torch.float64)
            chunks.append((noise * 2 - 1) * bound)
        return torch.cat(chunks).to(torch.float32)

    def _fan_shape(self, slot: _Slot) -> tuple[int, ...]:
        if slot.name.endswith("bias"):
            weight = next(s for s in self.slots if s.name == slot.name[:-4] + "weight")
            return weight.shape[1:]
        return slot.shape[1:]

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        lead = flat.shape[:-1]
        return {s.name: flat[..., s.start:s.stop].view(*lead, *s.shape) for s in self.slots}

    def _autocast(self, device: torch.device):
        """bfloat16 autocast for precision bf16 (conv and linear layers in bf16, their
        gradients flow back to the fp32 parameters as fp32); a no-op context for fp32."""
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")

    def _layout(self, x: torch.Tensor) -> torch.Tensor:
        """Images [B, C, H, W] in the engine's memory format (values unchanged)."""
        wanted = self.memory_format
        if wanted == "auto":
            cpu_nhwc = self.channels_last_on_cpu and not x.is_cuda
            wanted = "channels_last" if cpu_nhwc else "contiguous"
        if wanted == "channels_last" and x.dim() == 4:
            # to(), not contiguous(): with one input channel a contiguous NCHW tensor counts as
            # channels-last-contiguous, contiguous() returns it as it is and the convolution
            # then picks NCHW from its strides; to() gives it NHWC strides.
            return x.to(memory_format=torch.channels_last)
        return x

    def _loss(self, flat, x, y, weights):
        with self._autocast(flat.device):
            out = functional_call(self.module, self.unflatten(flat), (x,))
        loss = (weights * nn.functional.cross_entropy(_widened(out), y, reduction="none")).sum()
        if self.l2:
            loss = loss + 0.5 * self.l2 * (flat * flat).sum()
        return loss

    def _use_vmap(self, params: torch.Tensor) -> bool:
        return self.engine == "vmap" or (self.engine == "auto" and params.is_cuda)

    def loss_and_grads(self, params, x, y, weights):
        if self._use_vmap(params):
            grads, losses = vmap(grad_and_value(self._loss))(params, x, y, weights)
            return losses, grads
        grads = torch.empty_like(params)
        losses = torch.empty(params.shape[0], dtype=params.dtype, device=params.device)
        for n, loss, client_grads in self._loop_grads(params, x, y, weights):
            for slot, g in zip(self.slots, client_grads):
                grads[n, slot.start:slot.stop] = g.reshape(-1)
            losses[n] = loss
        return losses, grads

    def sgd_step_(self, params, x, y, weights, lr):
        """The loop engine updates each client's row right after its backward pass, while its
        gradient is in cache, instead of filling an [N, d] gradient buffer first (for
        FedAvgCNN, d = 582,026, that buffer is 233 MB at N = 100). Same arithmetic as
        `params.sub_(lr * grads)`: the product lr * g is rounded to fp32, then subtracted."""
        if self._use_vmap(params):
            super().sgd_step_(params, x, y, weights, lr)
            return
        if (self.manual_step and self.block_order and not params.is_cuda
                and self.memory_format != "contiguous"
                and not (self.block_order == "pool_bn_relu" and self.precision == "bf16")):
            dtype = torch.bfloat16 if self.precision == "bf16" else torch.float32
            for n in range(params.shape[0]):   # hand-written backward, NHWC (cnn_step.py)
                cnn_step.sgd_step_([params[n, s.start:s.stop].view(s.shape) for s in self.slots],
                                   x[n], y[n], weights[n], lr, self.l2, self.block_order, dtype)
            return
        step = torch.empty(max(s.stop - s.start for s in self.slots), dtype=params.dtype,
                           device=params.device)      # lr * g of one layer, reused (no temporaries)
        for n, _, client_grads in self._loop_grads(params, x, y, weights):
            for slot, g in zip(self.slots, client_grads):
                scaled = torch.mul(g.reshape(-1), lr, out=step[:slot.stop - slot.start])
                params[n, slot.start:slot.stop].sub_(scaled)

    def _loop_grads(self, params, x, y, weights):
        """Per client n: (n, loss, gradients per layer), by autograd on per-layer leaf views
        (differentiating through slices of the flat vector costs a full-size zero-fill per
        layer; benchmarks/README.md measured this form 1.2-1.4x faster). A client's gradients
        are consumed before the next client's pass starts."""
        for n in range(params.shape[0]):
            leaves = [params[n, s.start:s.stop].detach().view(s.shape).requires_grad_()
                      for s in self.slots]
            with torch.enable_grad():
                with self._autocast(params.device):
                    out = functional_call(self.module, {s.name: self._layout(leaf) for s, leaf
                                                        in zip(self.slots, leaves)},
                                          (self._layout(x[n]),))
                loss = (weights[n] * nn.functional.cross_entropy(_widened(out), y[n],
                                                                 reduction="none")).sum()
                if self.l2:
                    loss = loss + 0.5 * self.l2 * sum((leaf * leaf).sum() for leaf in leaves)
                grads = torch.autograd.grad(loss, leaves)
            yield n, loss.detach(), grads

    def logits(self, params, x):
        """fp32 logits whatever the training precision (evaluation measures the fp32 model)."""
        return functional_call(self.module, self.unflatten(params), (self._layout(x),))


# engine vmap on CPU (benchmarks/README.md): one grouped convolution over the clients
# per layer, measured 0.61x (cnn_mnist, N = 100, B = 50) and 0.31x (fedavg_cnn, N = 45, B = 10)
# of the naive per-client nn.Module loop; no engine slower than that loop is offered.
VMAP_ON_CPU = "0.61x (cnn_mnist) and 0.31x (fedavg_cnn) of a per-client nn.Module loop"


def check_engine(model: FlatModel, device: torch.device | str) -> None:
    """Stop when the configured engine is one not offered on `device`: `vmap` for the CNNs on
    CPU (measured slower than the naive per-client loop; `auto` runs the channels-last loop
    there). vmap stays offered on CUDA, and callable directly (the tests check its arithmetic
    on CPU as the CUDA path's)."""
    if getattr(model, "engine", None) == "vmap" and torch.device(device).type == "cpu":
        raise ValueError(f"engine 'vmap' is not offered on CPU for the CNN models ({model.name}): "
                         f"measured {VMAP_ON_CPU} (benchmarks/README.md); allowed on CPU: auto, "
                         f"loop (auto = the loop engine in channels-last); vmap on CUDA")


MODEL_NAMES = ("softmax", "mlp32", "cnn_mnist", "cnn_mnist_bn", "cnn_mnist_k3", "fedavg_cnn",
               "resnet18_gn", "resnet18_bn")
#: the models normalised by the batch's statistics (`FunctionalNetwork.batch_statistics`), by
#: name, for what must know it without building the model (`airfl plan`)
BATCH_STATISTICS_MODELS = ("cnn_mnist_bn", "resnet18_bn")


def build_model(name: str, image_shape: tuple[int, int, int], num_classes: int, l2: float = 0.0,
                engine: str = "auto", precision: str = "fp32") -> FlatModel:
    """The model named in params.yaml; image_shape is (channels, height, width). `precision`
    bf16 exists for the CNNs only (softmax and the MLP have hand-written fp32 gradients); tf32
    is fp32 in the model and TF32 in CUDA's matmuls (`apply_precision`)."""
    channels, height, _ = image_shape
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    if precision == "bf16" and name in ("softmax", "mlp32"):
        raise ValueError(f"precision {precision!r} is implemented for the CNN models "
                         f"(cnn_mnist, cnn_mnist_bn, cnn_mnist_k3, fedavg_cnn, resnet18_gn), not for "
                         f"{name!r}; use fp32")
    if name == "softmax":
        return SoftmaxRegression(channels * height * height, num_classes, l2=l2)
    if name == "mlp32":
        return TwoLayerMLP(channels * height * height, 32, num_classes, l2=l2)
    modules = {"cnn_mnist": lambda: MnistCNN(channels, num_classes, height),
               "cnn_mnist_bn": lambda: MnistCNN(channels, num_classes, height, batch_norm=True),
               "cnn_mnist_k3": lambda: MnistCNN(channels, num_classes, height, first_kernel=3),
               "fedavg_cnn": lambda: FedAvgCNN(channels, num_classes, height),
               "resnet18_gn": lambda: ResNet18GN(channels, num_classes),
               "resnet18_bn": lambda: ResNet18(channels, num_classes, batch_norm_without_stats)}
    if name in modules:
        return FunctionalNetwork(name, modules[name](), num_classes, engine, l2, precision)
    raise ValueError(f"unknown model {name!r}; allowed: {', '.join(MODEL_NAMES)}")
