"""The ResNet-18 of the OTA-FD appendix (8 residual blocks, global average pooling, 512 x 10 FC,
softmax; D = 11,173,962, stated). Its identity is reconstructed [R] (matched by parameter count): the CIFAR
variant of kuangliu/pytorch-cifar (3x3 stem, no max-pool, BasicBlocks [2, 2, 2, 2] with
BatchNorm, `airfl.models.flat.resnet18_bn`), which matches the parameter count exactly (BN affine
parameters counted, running statistics not). Used for the channel-use count of FL on
ResNet (X6); X2 trains the core's model `resnet18_bn` (the same layers, BatchNorm on batch
statistics so a WD's model is its parameter vector, [R]). airfl's ResNet18GN, which the CDPB
figures train, uses GroupNorm instead."""

from __future__ import annotations

from torch import nn

from airfl.models.flat import ResNet18, resnet18_bn


def ResNet18BN(num_classes: int = 10) -> ResNet18:      # noqa: N802 (the appendix's model name)
    """The appendix's ResNet-18 with BatchNorm for 3-channel 32x32 inputs."""
    return resnet18_bn(num_classes)


def parameter_count(module: nn.Module) -> int:
    """Trainable parameters (what an FL upload carries per round, one channel use each)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
