"""A stop asked for by a signal (Ctrl-C's SIGINT, a scheduler's or ``kill``'s SIGTERM), taken at a safe point.

While a training loop runs, the first SIGINT or SIGTERM only sets a flag: the loop ends its current iteration, writes
the checkpoint that ``--resume`` continues from, and raises :class:`~ding_lite.errors.Interrupted` (or
:class:`~ding_lite.errors.Terminated`) naming it. A stop taken mid-update could save half an update (the optimiser
stepped, the target net not yet); between iterations every part is whole. The first signal also puts the previous
handlers back, so a second one stops at once, as before. Handlers can only be set from the main thread: elsewhere
(a Ray Tune trial's thread) nothing changes.

What the user sees of a stop is the one line the CLI prints at the end (stopped, where, the checkpoint, ``--resume``).
Only a stop that takes longer than ``notice_after`` seconds (an evaluation or a large replay buffer's checkpoint in
progress) is announced before it, so that the user waits instead of pressing Ctrl-C again.
"""
from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from ding_lite.errors import Interrupted, Terminated

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequests:
    """``with StopRequests() as stops:`` around a loop that checks :attr:`requested` between iterations."""

    def __init__(self, notice_after: float = 2.0) -> None:
        self.requested: str | None = None  # the signal's name once one came
        self._before: dict[int, Any] = {}
        self._notice_after = notice_after
        self._signalled = threading.Event()  # set by the handler (a signal handler starts no thread of its own)
        self._answered = threading.Event()  # set once the stop is raised (or the loop is left): no notice then
        self._watcher: threading.Thread | None = None

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._before[sig] = signal.signal(sig, self._on_signal)
            self._watcher = threading.Thread(target=self._notice_if_slow, name="ding_lite-stop-notice", daemon=True)
            self._watcher.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # the handlers first: a signal whose handler ran while this thread held _signalled's lock (inside its set())
        # would wait on that lock for ever
        self._restore()
        self._answered.set()
        self._signalled.set()  # the notice thread ends
        if self._watcher is not None:
            self._watcher.join(timeout=1.0)  # nothing left behind in the caller's process

    def _restore(self) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._before = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.requested = signal.Signals(signum).name
        self._restore()  # a second signal acts at once
        # before, a notice was printed here at once, and the CLI's final line followed it a moment later: two lines
        # (an [eval] line between) saying the same; now the final line alone, unless the stop takes a while
        self._signalled.set()

    def _notice_if_slow(self) -> None:
        self._signalled.wait()
        if self._answered.wait(self._notice_after):
            return
        again = "Ctrl-C" if self.requested == "SIGINT" else "the signal"
        print(f"\nding_lite: {self.requested}: stopping after this iteration with a checkpoint to --resume from "
              f"({again} again stops at once, without one)", file=sys.stderr, flush=True)

    def error(self, checkpoint: str, env_step: int, train_iter: int) -> KeyboardInterrupt:
        """The stop that was asked for, to raise, naming the checkpoint written for it."""
        self._answered.set()  # the caller's line says it all
        message = f"stopped by {self.requested} at env_step {env_step}, train_iter {train_iter}; checkpoint " \
                  f"{checkpoint}: continue with --resume"
        return Terminated(message) if self.requested == "SIGTERM" else Interrupted(message)
