"""The round's [N, d] client-parameter buffer, backed by transparent huge pages where Linux offers
them on request.

local_sgd makes a fresh [N, d] tensor every round (the clients' models, returned as their
updates). For FedAvgCNN's 45 active clients that is 105 MB, and a fresh allocation of that size
is a new anonymous mapping: its first touch takes one page fault per 4 KiB page (25,600 faults,
each zeroing its page). benchmarks/README.md measured that first fill at 33-35 ms of CPU time,
a fifth of a one-step FedAvgCNN round, and 6.6 ms when the range is advised as huge pages
(2 MiB: 50 faults) before the first touch. The kernel honours the advice when
/sys/kernel/mm/transparent_hugepage/enabled is `always` or `madvise`; with `never`, on another
OS, or on CUDA the buffer is an ordinary tensor. The advice changes where the bytes live, never
their values.
"""

from __future__ import annotations

import ctypes
import sys

import torch

HUGE_PAGE = 2 << 20          # bytes of an x86-64 / arm64 transparent huge page
MADV_HUGEPAGE = 14           # <sys/mman.h> on Linux


def _madvise():
    """libc's madvise(addr, length, advice) on Linux, None elsewhere or when it cannot be found."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


_MADVISE = _madvise()


def huge_page_range(tensor: torch.Tensor) -> tuple[int, int]:
    """[start, stop) addresses of the whole 2 MiB pages inside `tensor`'s storage (empty when
    it spans none): the part that the advice may back by huge pages."""
    start = tensor.data_ptr()
    stop = start + tensor.numel() * tensor.element_size()
    return -(-start // HUGE_PAGE) * HUGE_PAGE, stop // HUGE_PAGE * HUGE_PAGE


def empty_rows(rows: int, like: torch.Tensor) -> torch.Tensor:
    """An uninitialised [rows, d] tensor with the dtype and device of `like` [d]; on CPU its whole
    2 MiB pages are advised as huge pages before anything touches them. The advice is a hint:
    when the kernel refuses it (returns -1), the tensor is the same, only slower to fill."""
    out = torch.empty(rows, like.numel(), dtype=like.dtype, device=like.device)
    if out.device.type == "cpu" and _MADVISE is not None:
        start, stop = huge_page_range(out)
        if stop > start:
            _MADVISE(start, stop - start, MADV_HUGEPAGE)
    return out


ROUND_BUDGET_BYTES = 1 << 30
"""Bytes the client-parameter rows of runs trained together may take (1 GiB: 9 DP-as-a-perk
FedAvgCNN runs of 45 clients, 100 cnn_mnist runs of 100 clients)."""


def rows_within(row_bytes: int, budget_bytes: int | None = None) -> int:
    """How many rows of `row_bytes` fit in `budget_bytes` (default `ROUND_BUDGET_BYTES`; at
    least one: a single row is never split)."""
    if row_bytes <= 0:
        raise ValueError(f"row_bytes must be positive; got {row_bytes}")
    return max(1, (ROUND_BUDGET_BYTES if budget_bytes is None else budget_bytes) // row_bytes)
