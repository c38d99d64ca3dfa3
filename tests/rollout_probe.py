"""A stand-in for a policy mode's ``rollout_weights`` that records how workers use it (a helper, not tests)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class RolloutBlockProbe:
    """``rollout_weights`` for a fake mode: counts the blocks entered, and wraps a forward function so that calls
    outside a block are counted too."""

    def __init__(self) -> None:
        self.inside = False
        self.entries = 0
        self.outside_calls = 0

    @contextmanager
    def rollout_weights(self) -> Iterator[None]:
        self.inside, self.entries = True, self.entries + 1
        try:
            yield
        finally:
            self.inside = False

    def watch(self, forward: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            self.outside_calls += not self.inside
            return forward(*args, **kwargs)
        return watched
