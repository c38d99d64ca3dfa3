"""Every warning ding_lite logs reads as one: its line starts with `warning:` (after a `[phase]` tag where the
pipeline tags its lines), as the config checks' and the env managers' do, so that a user can grep a run's log for
them and none reads as an ordinary progress line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unittest

PACKAGE = Path(__file__).resolve().parents[2] / "ding_lite"


def _leading_text(node: ast.expr) -> str | None:
    """The literal start of a message argument (a str, an f-string, or two literals joined by the parser)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def _warning_calls() -> list[tuple[str, str | None]]:
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warning" \
                    and node.args:
                calls.append((f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", _leading_text(node.args[0])))
    return calls


def test_every_logged_warning_starts_with_warning() -> None:
    calls = _warning_calls()
    assert len(calls) >= 10, "the scan found too few logger.warning calls to be reading the package"
    bad = [where for where, text in calls if text is None or not re.match(r"(\[\w+\] )?warning: ", text)]
    assert not bad, f"warnings without the 'warning: ' prefix: {bad}"
