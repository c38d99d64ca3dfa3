"""The on-policy base's helpers."""
from __future__ import annotations

import pytest
import torch

from ding_lite.policy.on_policy import gather_rows

pytestmark = pytest.mark.unittest


@pytest.mark.parametrize("make", [
    lambda: torch.randint(0, 256, (20, 4, 84, 84), dtype=torch.uint8),  # NCHW frames
    lambda: torch.randint(0, 256, (20, 4, 84, 84), dtype=torch.uint8).contiguous(memory_format=torch.channels_last),
    lambda: torch.randint(0, 11, (20, 7, 7, 3), dtype=torch.uint8).permute(0, 3, 1, 2),  # an HWC view
    lambda: torch.randn(20, 11),
    lambda: torch.randn(20, 3, dtype=torch.float64),
    lambda: torch.rand(20, 6) > 0.5,
    lambda: torch.randint(0, 256, (20, 3), dtype=torch.uint8),  # 3-byte rows: no wider word fits
    lambda: torch.randn(20, 10)[:, ::2],  # rows with gaps
    lambda: torch.randn(30, 5)[10:],  # an offset into the storage
    lambda: torch.randn(20),
])
def test_gather_rows_is_indexing_with_the_same_layout(make):
    torch.manual_seed(0)
    x = make()
    index = torch.randperm(len(x))[:13]
    out, ref = gather_rows(x, index), x[index]
    assert torch.equal(out, ref) and out.dtype == ref.dtype
    if x.dim() == 4:  # frames keep their memory format (what the conv encoder reads without a copy)
        assert out.stride() == ref.stride()
    assert torch.equal(gather_rows(x, torch.tensor([], dtype=torch.long)), x[:0])
