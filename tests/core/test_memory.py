"""The round's client-parameter buffer in huge pages (airfl.core.memory)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from airfl.core.memory import HUGE_PAGE, empty_rows, huge_page_range

THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def test_huge_page_range_is_the_whole_2mib_pages_inside_the_storage():
    tensor = torch.empty(3 * HUGE_PAGE // 4 + 100)          # > 3 MiB of float32: spans >= 1 page
    start, stop = huge_page_range(tensor)
    first, end = tensor.data_ptr(), tensor.data_ptr() + tensor.numel() * 4
    assert start % HUGE_PAGE == 0 and stop % HUGE_PAGE == 0
    assert first <= start < first + HUGE_PAGE and end - HUGE_PAGE < stop <= end
    small = torch.empty(10)
    assert huge_page_range(small)[1] <= huge_page_range(small)[0]      # no whole page: empty


def test_rows_hold_what_is_written_with_the_dtype_and_device_of_the_model():
    like = torch.arange(5, dtype=torch.float32)
    rows = empty_rows(3, like).copy_(like.unsqueeze(0).expand(3, -1))
    assert rows.shape == (3, 5) and rows.dtype == like.dtype and rows.device == like.device
    assert torch.equal(rows, like.repeat(3, 1))


def _anon_huge_kib(address: int) -> int:
    """AnonHugePages of the mapping of this process that holds `address` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(part, 16) for part in head.split("-"))
            inside = low <= address < high
        elif inside and line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


@pytest.mark.skipif(not sys.platform.startswith("linux") or not THP.exists()
                    or "[never]" in THP.read_text(),
                    reason="transparent huge pages are Linux's, and switched off here")
def test_a_large_buffer_is_backed_by_huge_pages_once_filled():
    """64 MiB (above glibc's largest mmap threshold, so a fresh mapping) advised before its first
    touch: the kernel backs it by 2 MiB pages (the measured 5x faster first fill)."""
    like = torch.ones(4 << 20)                               # 16 MiB a row
    rows = empty_rows(4, like).copy_(like.unsqueeze(0).expand(4, -1))
    start, stop = huge_page_range(rows)
    assert stop > start and _anon_huge_kib(start) >= 2048


def test_rows_within_a_budget_is_floor_and_at_least_one():
    from airfl.core.memory import rows_within
    assert rows_within(100, 1000) == 10 and rows_within(101, 1000) == 9
    assert rows_within(5000, 1000) == 1                       # one row is never split
    with pytest.raises(ValueError, match="row_bytes"):
        rows_within(0)
