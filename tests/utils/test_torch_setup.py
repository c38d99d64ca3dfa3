"""configure_torch: thread count and denormal flushing from the environment."""
from __future__ import annotations

import pytest
import torch

from ding_lite.utils.torch_setup import configure_torch

pytestmark = pytest.mark.unittest

DENORMAL = 1e-40  # below float32's smallest normal number, 1.18e-38


def _denormal_survives() -> bool:
    return bool(torch.tensor([DENORMAL], dtype=torch.float32).mul(1.0).item() != 0.0)


def test_configure_torch_flushes_denormals_unless_asked_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = torch.get_num_threads()
    try:
        monkeypatch.setenv("DING_LITE_TORCH_THREADS", "1")
        configure_torch()
        assert torch.get_num_threads() == 1
        if torch.set_flush_denormal(True):  # x86 with SSE3: the CPU can flush
            configure_torch()
            assert not _denormal_survives()
            monkeypatch.setenv("DING_LITE_FLUSH_DENORMAL", "0")
            configure_torch()
            assert _denormal_survives()
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)
