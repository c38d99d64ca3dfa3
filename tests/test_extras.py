"""A base install (``pip install ding_lite``, no extras): every optional package the code imports belongs to an extra
of setup.py, is imported only where it is used, and a missing one is named with its extra (ding_lite/extras.py)."""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from ding_lite.errors import ConfigError, PluginImportError
from ding_lite.extras import EXTRA_OF_MODULE, install_hint
from ding_lite.registry import import_modules, import_object

pytestmark = pytest.mark.unittest

BASE = {"torch", "numpy", "gymnasium", "easydict", "tensorboardX", "tqdm", "numba", "scipy"}
# the distribution that provides a module, where its name differs
DIST_OF_MODULE = {"cv2": "opencv-python-headless", "ale_py": "ale-py", "imageio_ffmpeg": "imageio-ffmpeg"}


def _setup_kwargs() -> dict[str, object]:
    call = next(node for node in ast.walk(ast.parse((REPO_ROOT / "setup.py").read_text()))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup")
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg in ("install_requires",
                                                                                      "extras_require")}


def _dist(requirement: str) -> str:
    return re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _third_party_imports(root: str) -> list[tuple[str, Path, bool]]:
    """(top-level module, file, imported at the module's top level) of every non-stdlib import under ``root``."""
    found = []
    for path in sorted((REPO_ROOT / root).rglob("*.py")):
        tree = ast.parse(path.read_text())
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("ding_lite", "dizoo"):
                    found.append((top, path, id(node) in top_level))
    return found


def test_base_dependencies_are_the_ones_setup_py_installs():
    assert {_dist(r) for r in _setup_kwargs()["install_requires"]} == {m.lower() for m in BASE}  # type: ignore


@pytest.mark.parametrize("root", ["ding_lite", "dizoo"])
def test_each_optional_import_belongs_to_an_extra(root):
    unknown = {f"{top} ({path.relative_to(REPO_ROOT)})" for top, path, _ in _third_party_imports(root)
               if top not in BASE and top not in EXTRA_OF_MODULE}
    assert not unknown, f"imports of packages that no extra installs (add them to ding_lite/extras.py): {unknown}"


def test_the_package_imports_optional_packages_only_where_it_uses_them():
    # `import ding_lite` and a CartPole run must work in a base install: ding_lite's modules import an extra's package
    # inside the function that needs it (dizoo's game modules may: they are imported through import_names)
    eager = [f"{top} at the top of {path.relative_to(REPO_ROOT)}" for top, path, top_level in
             _third_party_imports("ding_lite") if top_level and top not in BASE]
    assert not eager


def test_each_extra_named_exists_and_installs_the_package():
    extras = _setup_kwargs()["extras_require"]
    for module, extra in EXTRA_OF_MODULE.items():
        assert extra in extras, f"{module}: setup.py has no extra '{extra}'"  # type: ignore[operator]
        dists = {_dist(r) for r in extras[extra]}  # type: ignore[index]
        assert DIST_OF_MODULE.get(module, module).replace("_", "-") in dists, f"[{extra}] does not install {module}"
    named = set()
    for path in (REPO_ROOT / "ding_lite").rglob("*.py"):
        named |= set(re.findall(r"ding_lite\[([a-z]+)\]", path.read_text()))
    assert named and named <= set(extras), f"messages name extras setup.py lacks: {named - set(extras)}"  # type: ignore


def test_install_hint():
    assert install_hint("pettingzoo.classic.rps_v2") == "pip install 'ding_lite[pettingzoo]'"
    assert install_hint("ray") == "pip install 'ding_lite[ray]'"
    assert install_hint("my_own_package") == "" and install_hint(None) == ""


def _without_pettingzoo(monkeypatch) -> None:
    """As in a base install: importing pettingzoo, or any module of it an earlier test imported, fails."""
    for name in [m for m in sys.modules if m.startswith("pettingzoo.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pettingzoo", None)


def test_import_path_of_a_missing_extra_names_the_extra(monkeypatch):
    _without_pettingzoo(monkeypatch)
    with pytest.raises(ConfigError, match=re.escape("needs the pettingzoo package, which is not installed: pip "
                                                    "install 'ding_lite[pettingzoo]'")):
        import_object("pettingzoo.classic.rps_v2:parallel_env")


def test_import_names_module_needing_a_missing_extra_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "game_needing_pz.py").write_text(textwrap.dedent("""\
        from pettingzoo import AECEnv
        """))
    _without_pettingzoo(monkeypatch)
    with pytest.raises(PluginImportError) as info:
        import_modules(["game_needing_pz"], "env")
    assert str(info.value) == ("module 'game_needing_pz' listed in env.import_names needs the pettingzoo package, "
                               "which is not installed: pip install 'ding_lite[pettingzoo]'")
    sys.modules.pop("game_needing_pz", None)


def test_gsl_without_ray_stops_before_phase_one(tmp_path):
    # it trained phase I (200k env steps) in the new folder, then failed at the specialists for want of Ray
    fake = tmp_path / "no_ray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    work = tmp_path / "work"
    work.mkdir()
    config = REPO_ROOT / "dizoo" / "grid" / "maze" / "config" / "maze_trap_gsl_config.py"
    proc = run_cli("-m", "gsl", "-c", str(config), cwd=work, extra_pythonpath=[str(fake.parent)], timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "-m gsl" in lines[0] and "pip install 'ding_lite[ray]'" in lines[0], proc.stderr
    assert "gsl.use_ray=False" in lines[0]
    assert list(work.iterdir()) == []


def test_quickstart_installs_what_the_test_suite_imports():
    # `pip install -e ".[test]"` alone left pettingzoo out: four test files failed to import, and the Ray, plot, tracker
    # and env tests need their extras too; the by-hand line installs what scripts/test.sh installs
    wanted = re.search(r'pip install -q -e "\.\[([\w,]+)\]"', (REPO_ROOT / "scripts" / "test.sh").read_text())
    quickstart = (REPO_ROOT / "docs" / "quickstart.md").read_text()
    assert wanted and f'pip install -e ".[{wanted.group(1)}]"' in quickstart
