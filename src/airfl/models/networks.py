"""The papers' torch networks: the MNIST CNNs, FedAvg's CIFAR CNN and ResNet-18 (GroupNorm, and
BatchNorm without running statistics). `airfl.models.flat` wraps them as flat parameter vectors
(FunctionalNetwork) and builds them by name; they live apart so that each module holds one job.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn


class MnistCNN(nn.Module):
    """The small MNIST CNN (LAPA Sec. V-A's layers without its BatchNorm; channel counts ours):
    conv(1->10,5) - pool - ReLU - conv(10->20,5) - pool - ReLU - FC(320->50) - ReLU -
    FC(50->10); 21,840 parameters.
    `first_kernel=3` (model `cnn_mnist_k3`): OTA-FD's CNN (paper appendix: 21,680 parameters).

    `batch_norm=True` (model `cnn_mnist_bn`): LAPA's CNN as the paper states it (Sec. V-A: "two
    5x5 convolutional layers (each followed by a 2x2 max pooling layer), followed by a batch
    normalization layer, a fully connected layer with 50 units, a ReLU activation layer, and a
    softmax output layer"): BatchNorm2d(20) after the second pool, before its ReLU; 21,880
    parameters (its scale and shift: 40). Without running statistics (`batch_norm_without_stats`:
    the batch's own statistics in training and evaluation, so the model is its parameters alone
    and over-the-air aggregation sums nothing but them; our reading, the paper does not say how
    FL aggregates the statistics); evaluated in batches of `eval_batch` = 1,000 images, so a
    prediction's batch statistics do not depend on the size of the test set. Its fp32 CPU step
    is cnn_step.py's hand-written one (block order "pool_bn_relu"); bf16 takes autocast's
    autograd step."""

    channels_last_on_cpu = True     # measured faster in NHWC at batch 10-220 (benchmarks/README.md)

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 28,
                 first_kernel: int = 5, batch_norm: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 10, first_kernel)
        self.conv2 = nn.Conv2d(10, 20, 5)
        self.bn = batch_norm_without_stats(20) if batch_norm else None
        # conv - pool - ReLU (the second block: conv - pool - BatchNorm - ReLU): cnn_step.py
        self.block_order = "pool_bn_relu" if batch_norm else "pool_relu"
        self.eval_batch = 1000 if batch_norm else None
        side = ((image_size - first_kernel + 1) // 2 - 4) // 2
        self.fc1 = nn.Linear(20 * side * side, 50)
        self.fc2 = nn.Linear(50, num_classes)

    def forward(self, x):
        x = torch.relu(torch.max_pool2d(self.conv1(x), 2))
        x = torch.max_pool2d(self.conv2(x), 2)
        if self.bn is not None:
            x = self.bn(x)
        x = torch.relu(x)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)

    def constant_init(self) -> dict[str, float]:
        """Parameters PyTorch initialises to a constant: BatchNorm's scale 1 and shift 0."""
        return {"bn.weight": 1.0, "bn.bias": 0.0} if self.bn is not None else {}


class FedAvgCNN(nn.Module):
    """PFLlib's FedAvgCNN used by DP-as-a-perk: d = 582,026 on 28x28 inputs."""

    channels_last_on_cpu = True     # measured faster in NHWC at batch 10-50 (benchmarks/README.md)
    block_order = "relu_pool"       # conv - ReLU - pool: the fp32 CPU step of cnn_step.py

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 28):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 32, 5)
        self.conv2 = nn.Conv2d(32, 64, 5)
        side = ((image_size - 4) // 2 - 4) // 2
        self.fc1 = nn.Linear(64 * side * side, 512)
        self.fc2 = nn.Linear(512, num_classes)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


class _BasicBlock(nn.Module):
    """ResNet basic block (two 3x3 convs); `norm(channels)` makes its normalisation layers."""

    def __init__(self, inputs: int, outputs: int, stride: int, norm: Callable[[int], nn.Module]):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.norm1 = norm(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.norm2 = norm(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                          norm(outputs))

    def forward(self, x):
        out = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs (3x3 stem, no max-pool, BasicBlocks [2, 2, 2, 2], as usual for
    CIFAR: kuangliu/pytorch-cifar's variant) with the normalisation `norm(channels)` makes."""

    def __init__(self, in_channels: int, num_classes: int, norm: Callable[[int], nn.Module]):
        super().__init__()
        self.stem = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        self.norm = norm(64)
        layers, inputs = [], 64
        for outputs, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [_BasicBlock(inputs, outputs, stride, norm),
                       _BasicBlock(outputs, outputs, 1, norm)]
            inputs = outputs
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        out = self.layers(torch.relu(self.norm(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1))


class ResNet18GN(ResNet18):
    """ResNet-18 with GroupNorm (2 groups per layer): CDPB trains it on CIFAR-10/100.
    GroupNorm, not BatchNorm, because running statistics are not parameters that over-the-air
    aggregation can sum."""

    # fp32 NHWC measured 0.87x of NCHW on CPU (GroupNorm; batch 16, benchmarks/README.md)
    channels_last_on_cpu = False

    def __init__(self, in_channels: int = 3, num_classes: int = 10, groups: int = 2):
        super().__init__(in_channels, num_classes, lambda channels: nn.GroupNorm(groups, channels))


def batch_norm_without_stats(channels: int) -> nn.BatchNorm2d:
    """BatchNorm that always normalises with the batch's statistics (no running buffers), so a
    model is its parameters alone: what a flat parameter vector per device needs (OTA-FD's
    trained ResNet-18, model `resnet18_bn`; same affine parameters, same count)."""
    return nn.BatchNorm2d(channels, track_running_stats=False)


def resnet18_bn(num_classes: int = 10, in_channels: int = 3) -> ResNet18:
    """ResNet-18 with BatchNorm (the common CIFAR model; e.g. the OTA-FD appendix's, whose stated
    D = 11,173,962 it matches with BN's affine parameters counted)."""
    return ResNet18(in_channels, num_classes, nn.BatchNorm2d)
