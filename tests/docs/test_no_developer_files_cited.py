"""Users get the docs pages and the code, not the developers' design notes: neither cites them (a reader would look
for a file that is not there)."""
from __future__ import annotations

import re

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unittest

DEVELOPER_FILES = re.compile(r"\b(ALGORITHMS|ARCHITECTURE|STYLE|BENCHMARKS)(\.md| §)")
PAGES = sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]
# the GSL and PPO-DAPG code, its env families and benchmark (other modules are checked where their owners clean
# them up)
GSL_CODE = sorted((REPO_ROOT / "ding_lite" / "entry").glob("gsl*.py")) + [
    REPO_ROOT / "ding_lite" / "policy" / "ppo_dapg.py", REPO_ROOT / "ding_lite" / "rl_utils" / "dapg.py",
    REPO_ROOT / "ding_lite" / "envs" / "variations.py", REPO_ROOT / "benchmarks" / "gsl_vs_ppo.py"] + sorted(
    p for family in ("grid/maze", "classic_control/mountain_car_family")
    for p in (REPO_ROOT / "dizoo" / family).rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", PAGES + GSL_CODE, ids=[p.name for p in PAGES + GSL_CODE])
def test_no_developer_file_is_cited(path) -> None:
    hits = [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
            if DEVELOPER_FILES.search(line)]
    assert not hits, "\n".join(hits)
