"""A local Ray instance that does not start (Ray gives its processes 30 s, hard-coded; on a loaded machine they can
take longer) ends the run in one line naming Ray, exit code 2; before, Ray's bare ``Exception`` came out as a
traceback and exit code 1."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

pytestmark = pytest.mark.unittest

RAY_MESSAGE = ("The current node timed out during startup. This could happen because some of the raylet failed to "
               "startup or the GCS has become overloaded.")


def test_a_local_ray_instance_that_does_not_start_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture) -> None:
    ray = pytest.importorskip("ray")
    from ding_lite.cli import main

    shutdowns = []

    def init(*args, **kwargs):
        raise Exception(RAY_MESSAGE)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # another test in this worker may have left Ray on
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: shutdowns.append(1))
    monkeypatch.chdir(tmp_path)
    code = main(["-m", "parallel", "-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "--max-env-step", "200",
                 "--exp-name", "exp", "--no-progress"])
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert code == 2
    assert len(errors) == 1, errors
    assert errors[0].startswith("ding_lite: error: the local Ray instance did not start: The current node "
                                "timed out during startup."), errors[0]
    assert shutdowns, "what did start of the instance is stopped"
