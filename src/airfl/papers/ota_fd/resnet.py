"""The ResNet-18 of the OTA-FD appendix (8 residual blocks, global average pooling, 512 x 10 FC,
softmax; D = 11,173,962, stated). Its identity is reconstructed [R] (Errata 4): the CIFAR
variant of kuangliu/pytorch-cifar (3x3 stem, no max-pool, BasicBlocks [2, 2, 2, 2] with
BatchNorm), which matches the parameter count exactly (BN affine parameters counted, running
statistics not; spec §6.2). Used for the channel-use count of FL on ResNet (X2); its training
(X2, GPU work) is not part of this step. airfl's own ResNet18GN uses GroupNorm instead."""

from __future__ import annotations

import torch
from torch import nn


class _Block(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                          nn.BatchNorm2d(outputs))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18BN(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, inputs = [], 64
        for outputs, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [_Block(inputs, outputs, stride), _Block(outputs, outputs, 1)]
            inputs = outputs
        self.layers = nn.Sequential(*layers)
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        out = self.layers(torch.relu(self.bn1(self.conv1(x))))
        return self.linear(torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1))


def parameter_count(module: nn.Module) -> int:
    """Trainable parameters (what an FL upload carries per round, one channel use each)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
