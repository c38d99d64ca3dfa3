"""The suite's ``caplog`` (tests/conftest.py) sees the ``ding_lite`` logger whatever tests ran before in the same
worker: a run's console handler turns that logger's propagation off, and pytest's own caplog then saw nothing, so
that tests asserting no warning passed whatever was logged (and the disk and memory warning tests failed in CI)."""
from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.unittest


def test_caplog_sees_the_ding_lite_logger_when_it_does_not_propagate(caplog, monkeypatch) -> None:
    logger = logging.getLogger("ding_lite")
    monkeypatch.setattr(logger, "propagate", False)  # as an earlier run in this process leaves it
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        logger.warning("warning: seen")
    assert [r.getMessage() for r in caplog.records] == ["warning: seen"]
