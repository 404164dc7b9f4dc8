"""One client's SGD step of the two small CNNs by a hand-written backward pass.

MnistCNN and FedAvgCNN are conv - (pool, ReLU) - conv - (pool, ReLU) - FC - ReLU - FC. For them
the loop engine's step on CPU runs the forward pass with saved activations, then the backward
pass with the same ATen kernels autograd would call (oneDNN convolution backward, max-pool
backward with the forward's indices, threshold backward for ReLU), in channels-last, and
subtracts lr * gradient from the client's parameter row as each gradient is made; the two
linear layers' weight updates come straight out of their gradient GEMMs
(`W.addmm_(g.T, a, alpha=-lr)`), so no [out, in] gradient tensor is written and read again
(fc1 of FedAvgCNN: 2 MB per client step). This removes autograd's graph and per-op overhead and
one pass over the largest layer; benchmarks/README.md measured the fp32 step 1.16x (cnn_mnist,
B = 50) and 1.21x (FedAvgCNN, B = 10) faster than the autograd step.

Arithmetic (fp32): the gradient of sum_b w_b CE(logits_b, y_b) + (l2/2)||theta||^2 (the loop
engine's loss), exact fp32; it differs from the autograd step only in summation and rounding
order (lr * g inside the GEMM instead of rounded first; weight decay folded in as
theta * (1 - lr l2)): ~1e-7 relative per step, a test bounds it against autograd.

bf16 (`dtype=torch.bfloat16`, precision: bf16): the same step on bf16 copies of the parameters,
inputs and activations (convolutions, pooling, ReLU, the linear layers' forward and
input-gradient products: what bfloat16 autocast runs in bf16), loss and logit gradient in fp32,
fp32 master weights. Where autocast rounds the linear layers' weight gradients to bf16 before
the fp32 update, this step accumulates them in fp32 (addmm_ of the exactly widened bf16
factors into the fp32 weights); the convolutions' bf16 gradients are subtracted in fp32 as in
autocast. A test bounds it against autocast's autograd step (~2e-3 of the largest update
entry, a few bf16 roundings). Measured 1.2x (FedAvgCNN, B = 10) and 1.7x (MnistCNN, B = 50)
faster per step than the fp32 fused step, 1.3x / 1.2x faster than autocast's autograd step
(benchmarks/README.md).

Which order a network's blocks use is its `block_order` ("pool_relu": MnistCNN, max-pool then
ReLU; "relu_pool": FedAvgCNN; "pool_bn_relu": LAPA's MnistCNN with BatchNorm, whose second
block is conv - pool - BatchNorm - ReLU); networks without it take the autograd step.

BatchNorm (`pool_bn_relu`, fp32 only; bf16 takes autocast's autograd step): normalised by the
batch's statistics (the model keeps none, `networks.batch_norm_without_stats`), forward and
backward by the ATen kernels autograd calls for it on CPU (`native_batch_norm`,
`native_batch_norm_backward`), so its gradients are autograd's; its scale and shift are
updated like the biases. A test bounds the step against autograd's (1e-4 of the largest update
entry); benchmarks/results/paper_rounds_2026-11-29.md measured it against the autograd step."""

from __future__ import annotations

import torch
from torch.nn import functional as F

aten = torch.ops.aten
BLOCK_ORDERS = ("pool_relu", "relu_pool", "pool_bn_relu")
_POOL = ([2, 2], [2, 2], [0, 0], [1, 1], False)          # kernel, stride, padding, dilation, ceil
BN_EPS = 1e-5                                            # nn.BatchNorm2d's, the networks' BN


def _block_forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, order: str,
                   norm: tuple[torch.Tensor, torch.Tensor] | None = None):
    """conv -> (pool, ReLU) in `order`, with `norm` (BatchNorm's scale and shift) between pool
    and ReLU; returns the block output and what the backward needs."""
    conv = F.conv2d(x, weight, bias)
    if order == "relu_pool":
        act = torch.relu(conv)
        out, index = aten.max_pool2d_with_indices(act, *_POOL[:2])
        return out, (act, index)
    pooled, index = aten.max_pool2d_with_indices(conv, *_POOL[:2])
    if norm is None:
        out = torch.relu(pooled)
        return out, (conv, index, out, None)
    # the batch's statistics (training=True; no running statistics to update)
    normed, mean, invstd = aten.native_batch_norm(pooled, norm[0], norm[1], None, None, True,
                                                  0.0, BN_EPS)
    out = torch.relu(normed)
    return out, (conv, index, out, (pooled, norm[0], mean, invstd))


def _block_backward(grad: torch.Tensor, saved: tuple, order: str
                    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """Gradient at the convolution's output from the gradient at the block's output, and the
    gradients of the block's BatchNorm scale and shift (None without)."""
    if order == "relu_pool":
        act, index = saved
        grad = aten.max_pool2d_with_indices_backward(grad, act, *_POOL, index)
        return aten.threshold_backward(grad, act, 0), None
    conv, index, out, norm = saved
    grad = aten.threshold_backward(grad, out, 0)
    norm_grads = None
    if norm is not None:
        pooled, scale, mean, invstd = norm
        grad, grad_scale, grad_shift = aten.native_batch_norm_backward(
            grad, pooled, scale, None, None, mean, invstd, True, BN_EPS, [True, True, True])
        norm_grads = (grad_scale, grad_shift)
    return aten.max_pool2d_with_indices_backward(grad, conv, *_POOL, index), norm_grads


def sgd_step_(row: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor,
              lr: float, l2: float, order: str, dtype: torch.dtype = torch.float32) -> None:
    """theta <- theta - lr * grad for one client, in place on `row`: the views [conv1.weight,
    conv1.bias, conv2.weight, conv2.bias, fc1.weight, fc1.bias, fc2.weight, fc2.bias] of its
    parameter row (order "pool_bn_relu": bn.weight, bn.bias after conv2.bias); x [B, C, H, W],
    y [B], weights [B] (the per-sample loss weights).

    `dtype` bfloat16 (precision: bf16): the convolutions, pooling, ReLUs and the linear layers'
    forward and input-gradient products run on bf16 copies of the parameters and activations
    (what bfloat16 autocast runs), the loss and its gradient at the logits in fp32; the row
    stays fp32 (master weights) and the update is accumulated in fp32: the linear layers' weight
    updates are fp32 GEMMs of the (exactly widened) bf16 factors, where autocast rounds those
    gradients to bf16 first, and the convolutions' bf16 gradients are subtracted in fp32. For
    fp32 every cast below is the identity and the arithmetic is the fp32 step's."""
    norm = None
    if order == "pool_bn_relu":
        if dtype != torch.float32:
            raise ValueError("the BatchNorm CNN's hand-written step is fp32 only (bf16: "
                             "autocast's autograd step)")
        w1, b1, w2, b2, scale, shift, w3, b3, w4, b4 = row
        norm, order = (scale, shift), "pool_relu"
    else:
        w1, b1, w2, b2, w3, b3, w4, b4 = row
    nhwc = torch.channels_last
    x = x.to(dtype, memory_format=nhwc)
    w1c, w2c = w1.to(dtype, memory_format=nhwc), w2.to(dtype, memory_format=nhwc)
    b1c, b2c, w3c, b3c, w4c, b4c = (p.to(dtype) for p in (b1, b2, w3, b3, w4, b4))
    out1, saved1 = _block_forward(x, w1c, b1c, order)
    out2, saved2 = _block_forward(out1, w2c, b2c, order, norm)
    flat = out2.flatten(1)                                              # NCHW order, as the module
    hidden = torch.relu(torch.addmm(b3c, flat, w3c.t()))
    logits = torch.addmm(b4c, hidden, w4c.t()).float()                  # fp32 loss (autocast's too)
    # d/dlogits of sum_b w_b CE(logits_b, y_b) = w_b (softmax(logits_b) - onehot(y_b))
    grad_logits = torch.softmax(logits, dim=1)
    grad_logits[torch.arange(len(y), device=y.device), y] -= 1.0
    grad_logits.mul_(weights.unsqueeze(1))
    grad_hidden = aten.threshold_backward(grad_logits.to(dtype) @ w4c, hidden, 0)
    grad_out2 = (grad_hidden @ w3c).view(out2.shape)
    grad_conv2, grad_norm = _block_backward(grad_out2, saved2, order)
    grad_out1, grad_w2, grad_b2 = aten.convolution_backward(
        grad_conv2, out1, w2c, [w2.shape[0]], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
        [True, True, True])
    grad_conv1, _ = _block_backward(grad_out1, saved1, order)
    _, grad_w1, grad_b1 = aten.convolution_backward(
        grad_conv1, x, w1c, [w1.shape[0]], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
        [False, True, True])
    hidden, flat, grad_hidden = hidden.float(), flat.float(), grad_hidden.float()   # exact widening
    # every gradient is made from the old parameters; now the update
    if l2:                                         # grad of (l2/2)||theta||^2 is l2 * theta
        for p in row:
            p.mul_(1.0 - lr * l2)
    w4.addmm_(grad_logits.t(), hidden, alpha=-lr)
    b4.sub_(grad_logits.sum(dim=0), alpha=lr)
    w3.addmm_(grad_hidden.t(), flat, alpha=-lr)
    b3.sub_(grad_hidden.sum(dim=0), alpha=lr)
    if norm is not None:                           # BatchNorm's scale and shift
        scale.sub_(grad_norm[0], alpha=lr)
        shift.sub_(grad_norm[1], alpha=lr)
    w2.sub_(grad_w2, alpha=lr)                     # bf16 gradients: subtracted in fp32
    b2.sub_(grad_b2, alpha=lr)
    w1.sub_(grad_w1, alpha=lr)
    b1.sub_(grad_b1, alpha=lr)
