"""What a user sees of Ctrl-C or SIGTERM in a training loop: one line, the stop's own (raised to the CLI), unless the
stop takes a while, when a notice comes first so that the user waits instead of pressing Ctrl-C again."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from ding_lite.errors import Interrupted, Terminated
from ding_lite.runtime.stop_requests import StopRequests

pytestmark = pytest.mark.unittest


@pytest.mark.parametrize("sig, kind", [(signal.SIGINT, Interrupted), (signal.SIGTERM, Terminated)])
def test_a_quick_stop_prints_nothing_before_its_one_line(sig: signal.Signals, kind: type, capsys) -> None:
    """Before, the handler printed a notice at once and the CLI the stop's line a moment later: two lines saying
    the same (with the iteration's [eval] line between)."""
    with StopRequests(notice_after=0.5) as stops:
        os.kill(os.getpid(), sig)
        time.sleep(0.05)  # the handler runs (the signal arrives between bytecodes)
        assert stops.requested == sig.name
        stop = stops.error("exp/ckpt/iteration_3.pth.tar", 96, 3)
        time.sleep(0.8)  # past the notice's delay: it was called off
    assert isinstance(stop, kind) and str(stop).endswith("checkpoint exp/ckpt/iteration_3.pth.tar: continue with "
                                                         "--resume")
    assert capsys.readouterr().err == ""
    assert signal.getsignal(sig) != stops._on_signal  # the handlers before are back


def test_a_slow_stop_is_announced_once(capsys) -> None:
    with StopRequests(notice_after=0.1) as stops:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # an evaluation in progress
        stops.error("none", 0, 0)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["ding_lite: SIGTERM: stopping after this iteration with a checkpoint to --resume from (the "
                     "signal again stops at once, without one)"]


def test_leaving_the_loop_puts_the_handlers_back_before_it_takes_the_events_locks(monkeypatch) -> None:
    """__exit__ set the watcher's event while the handler was still in place: a Ctrl-C in that moment ran the handler,
    which sets the same event, inside set() on the thread that held its (not re-entrant) lock: the run hung."""
    stops = StopRequests()
    seen = []

    class _Probe:
        def __init__(self, event: threading.Event) -> None:
            self.event = event

        def set(self) -> None:
            seen.append(signal.getsignal(signal.SIGINT))  # what a signal arriving now would run
            self.event.set()  # the watcher waits on the event itself: it ends as before

        def wait(self, timeout: float | None = None) -> bool:
            return self.event.wait(timeout)

    with stops:
        monkeypatch.setattr(stops, "_signalled", _Probe(stops._signalled))
        monkeypatch.setattr(stops, "_answered", _Probe(stops._answered))
    assert len(seen) == 2 and stops._on_signal not in seen
    assert not stops._watcher.is_alive()
