"""The arithmetic of training: `precision: fp32 | tf32 | bf16`, and what it sets on a device.

fp32 is exact fp32 everywhere: on CUDA that needs TF32 off, since PyTorch's cuDNN default lets
convolutions run in TF32 (and "fp32" would silently be TF32). tf32 is fp32 in the model with
TF32 tensor-core matmuls and convolutions on CUDA; it has no CPU meaning here and is refused
there rather than run as fp32 under another name. bf16 is bfloat16 forward and backward of the
CNNs with fp32 master weights, loss, update and evaluation (`airfl.models.flat`, `airfl.models.cnn_step`).
The chosen precision, with the flags as torch holds them, is recorded with every train run.
"""

from __future__ import annotations

import torch

PRECISIONS = ("fp32", "tf32", "bf16")

__all__ = ["PRECISIONS", "apply_precision", "arithmetic_record", "cuda_arithmetic"]


def cuda_arithmetic(precision: str) -> dict[str, bool]:
    """The CUDA flags a precision sets: fp32 is exact fp32, so TF32 tensor-core matmuls and
    convolutions are off (cuDNN's default is on: "fp32" would silently be TF32 otherwise);
    tf32 turns both on; bf16 runs its matmuls and convolutions in bfloat16 under autocast and
    keeps any fp32 matmul exact (TF32 off)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    tf32 = precision == "tf32"
    return {"cuda_matmul_allow_tf32": tf32, "cudnn_allow_tf32": tf32}


def apply_precision(precision: str, device: torch.device | str) -> dict[str, object]:
    """Set the process's arithmetic for training on `device` with `precision` and return what
    was set (recorded with the run). On CUDA: `cuda_arithmetic`'s flags and the matching fp32
    matmul precision ("highest", or "high" for tf32). On CPU nothing is set: fp32 is exact there
    already, and tf32 (a CUDA tensor-core format) is refused rather than run as fp32 under
    another name."""
    flags = cuda_arithmetic(precision)
    device = torch.device(device)
    if device.type != "cuda":
        if precision == "tf32":
            raise ValueError("precision 'tf32' is a CUDA arithmetic (tensor-core TF32); on "
                             f"{device.type} use fp32 (exact) or bf16")
        return arithmetic_record(precision, device)
    torch.backends.cuda.matmul.allow_tf32 = flags["cuda_matmul_allow_tf32"]
    torch.backends.cudnn.allow_tf32 = flags["cudnn_allow_tf32"]
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    return arithmetic_record(precision, device)


def arithmetic_record(precision: str, device: torch.device | str) -> dict[str, object]:
    """What a run records of its arithmetic: the precision, the device type and, on CUDA, the
    TF32 flags as torch holds them (read back, not assumed)."""
    device = torch.device(device)
    record: dict[str, object] = {"precision": precision, "device": device.type}
    if device.type == "cuda":
        record.update(cuda_matmul_allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
                      cudnn_allow_tf32=bool(torch.backends.cudnn.allow_tf32),
                      float32_matmul_precision=torch.get_float32_matmul_precision())
    return record
