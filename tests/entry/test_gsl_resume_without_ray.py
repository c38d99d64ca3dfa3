"""A GSL run with ``gsl.use_ray=True`` needs Ray only to train specialists: resumed after its specialists finished, it
goes on where Ray is missing (before, it was refused at the start); resumed with specialists left to train, it is
refused in one line before anything more runs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from tests.entry.test_gsl_resume_settings import TINY

pytestmark = pytest.mark.unittest


def _without_ray(tmp_path: Path) -> list[str]:
    fake = tmp_path / "no_ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    return [str(fake.parent)]


def test_a_resume_whose_specialists_are_done_needs_no_ray(tmp_path: Path) -> None:
    (tmp_path / "gsl_tiny.py").write_text(TINY)
    first = run_cli("-m", "gsl", "-c", "gsl_tiny.py", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    before = json.loads((tmp_path / "gsl_exp" / "result.json").read_text())
    proc = run_cli("-m", "gsl", "-c", "gsl_tiny.py", "--no-progress", "--resume", "--set", "gsl.use_ray=True",
                   cwd=tmp_path, extra_pythonpath=_without_ray(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    after = json.loads((tmp_path / "gsl_exp" / "result.json").read_text())
    assert after["phases_done"] == before["phases_done"] and after["summary"] == before["summary"]


def test_a_resume_with_specialists_left_needs_ray_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "gsl_tiny.py").write_text(TINY)
    exp = tmp_path / "gsl_exp"
    exp.mkdir()
    (exp / "result.json").write_text(json.dumps({"variations": list(range(6)), "seed": 0,
                                                 "phases_done": ["phase1_generalist"],
                                                 "specialist_subsets": [[0, 2], [1, 3]]}))
    before = sorted(p.name for p in exp.iterdir())
    proc = run_cli("-m", "gsl", "-c", "gsl_tiny.py", "--no-progress", "--resume", "--set", "gsl.use_ray=True",
                   cwd=tmp_path, extra_pythonpath=_without_ray(tmp_path))
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "-m gsl (gsl.use_ray=True" in lines[0] and "needs Ray" in lines[0], proc.stderr
    assert sorted(p.name for p in exp.iterdir()) == before
