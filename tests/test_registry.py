"""Registry behaviour (ding_lite/registry.py): unknown types, duplicate names, re-imports, import_names, plugins."""
from __future__ import annotations

import importlib
import importlib.metadata
import sys
import textwrap
from pathlib import Path

import pytest

from ding_lite import registry
from ding_lite.config import compile_config
from ding_lite.errors import ConfigError, DuplicateRegistrationError, PluginImportError, UnknownTypeError
from ding_lite.registry import POLICY_REGISTRY, Registry, closest_match, import_modules, import_object

pytestmark = pytest.mark.unittest


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A folder on sys.path holding a registry module and plugin modules written by the test (removed after)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    (tmp_path / "reg_holder_mod.py").write_text("from ding_lite.registry import Registry\n"
                                                "WIDGET = Registry('widget')\n")
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("reg_holder_mod", "widget_plugin", "broken_plugin")):
            del sys.modules[name]


def _write_widget_plugin(folder: Path, module: str, name: str = "gear") -> None:
    (folder / f"{module}.py").write_text(textwrap.dedent(f"""
        from reg_holder_mod import WIDGET

        @WIDGET.register({name!r})
        class Gear:
            pass
    """))


def test_unknown_type_lists_known_and_closest() -> None:
    reg = Registry("widget")

    @reg.register("alpha")
    class Alpha:
        pass

    @reg.register("beta")
    class Beta:
        pass

    with pytest.raises(UnknownTypeError) as info:
        reg.get("alpah")
    message = str(info.value)
    assert "unknown widget type 'alpah'" in message
    assert "did you mean 'alpha'?" in message
    assert "known widget types: alpha, beta" in message
    assert "@WIDGET_REGISTRY.register('alpah')" in message and "import_names" in message  # says the fix
    with pytest.raises(UnknownTypeError) as info:  # nothing close: no suggestion, still the list
        reg.get("zzzzzz")
    assert "did you mean" not in str(info.value) and "alpha, beta" in str(info.value)


def test_unknown_builtin_policy_suggests_nearest() -> None:
    with pytest.raises(UnknownTypeError, match=r"unknown policy type 'dqnn' \(did you mean 'dqn'\?\)") as info:
        POLICY_REGISTRY.get("dqnn")
    assert "ppo" in str(info.value)


def test_closest_match() -> None:
    assert closest_match("CartPole-v2", ["CartPole-v1", "Pendulum-v1"]) == "CartPole-v1"
    assert closest_match("xyz", ["CartPole-v1"]) is None


def test_an_abbreviated_type_points_to_its_full_name() -> None:
    # the docs call ensemble_ppo EPPO; by spelling alone 'eppo' is closest to 'ppo'
    with pytest.raises(UnknownTypeError, match=r"unknown policy type 'eppo' \(did you mean 'ensemble_ppo'\?\)"):
        POLICY_REGISTRY.get("eppo")
    assert closest_match("EPPO", ["ppo", "ensemble_ppo"]) == "ensemble_ppo"


def test_different_object_under_taken_name_is_an_error() -> None:
    reg = Registry("widget")

    @reg.register("gear")
    class Gear:
        pass

    class OtherGear:
        pass

    with pytest.raises(DuplicateRegistrationError) as info:
        reg.register("gear")(OtherGear)
    message = str(info.value)
    assert "widget type 'gear' is already registered" in message
    assert "Gear" in message and "OtherGear" in message and "choose another name" in message
    assert reg.get("gear") is Gear  # the first registration stays


def test_same_object_twice_is_fine() -> None:
    reg = Registry("widget")

    def factory() -> int:
        return 1

    reg.register("f")(factory)
    reg.register("f")(factory)
    assert reg.get("f") is factory and reg.names() == ["f"]


def test_reimporting_a_module_is_not_an_error(plugin_dir: Path) -> None:
    _write_widget_plugin(plugin_dir, "widget_plugin_a")
    module = importlib.import_module("widget_plugin_a")
    first = module.Gear
    reloaded = importlib.reload(module)  # executes the module again: a new class object, same definition site
    holder = importlib.import_module("reg_holder_mod")
    assert reloaded.Gear is not first
    assert holder.WIDGET.get("gear") is reloaded.Gear


def _run_cell(source: str, reg: Registry) -> None:
    """Run ``source`` as a notebook cell does: compiled from no file, in the session's ``__main__``-like globals."""
    exec(compile(source, "<cell>", "exec"), {"__name__": "nb_session_main", "reg": reg})


@pytest.mark.parametrize("definition", ["def make(cfg):\n    return {v}",
                                        "class make:\n    def __new__(cls, cfg):\n        return {v}"])
def test_a_notebook_cell_run_again_after_an_edit_replaces_its_registration(definition: str) -> None:
    # an edit above the definition moves it: a factory registered again from the edited cell raised 'already
    # registered' and the first definition stayed
    reg = Registry("widget")
    cell = "@reg.register('w')\n" + definition
    _run_cell(cell.format(v=1), reg)
    _run_cell(cell.format(v=2), reg)  # run again unchanged
    assert reg.get("w")(None) == 2
    _run_cell("# edited\n\n" + cell.format(v=3), reg)
    assert reg.get("w")(None) == 3


def test_two_lambdas_under_one_name_clash_but_one_run_again_replaces() -> None:
    # every lambda's qualified name is '<lambda>': the replace rule for a definition run again must not let a second,
    # different lambda of the same module take a name silently
    reg = Registry("widget")
    _run_cell("reg.register('w')(lambda cfg: 1)", reg)
    _run_cell("reg.register('w')(lambda cfg: 2)", reg)  # the same line run again (a notebook cell): replaced
    assert reg.get("w")(None) == 2
    with pytest.raises(DuplicateRegistrationError, match="already registered"):
        _run_cell("pass\nreg.register('w')(lambda cfg: 3)", reg)  # another lambda, another line
    assert reg.get("w")(None) == 2


def test_force_overwrite_replaces_another_object() -> None:
    reg = Registry("widget")

    @reg.register("gear")
    class Gear:
        pass

    with pytest.raises(DuplicateRegistrationError, match=r"force_overwrite=True"):
        @reg.register("gear")
        class OtherGear:
            pass

    @reg.register("gear", force_overwrite=True)  # DI-engine's keyword
    class ThirdGear:
        pass

    assert reg.get("gear") is ThirdGear


def test_same_name_from_another_module_is_an_error(plugin_dir: Path) -> None:
    _write_widget_plugin(plugin_dir, "widget_plugin_a")
    _write_widget_plugin(plugin_dir, "widget_plugin_b")
    importlib.import_module("widget_plugin_a")
    with pytest.raises(DuplicateRegistrationError, match="widget_plugin_a.Gear.*widget_plugin_b.Gear"):
        importlib.import_module("widget_plugin_b")


def test_import_names_missing_module_names_the_section() -> None:
    with pytest.raises(PluginImportError) as info:
        import_modules(["no_such_module_xyz"], "policy")
    message = str(info.value)
    assert "cannot import module 'no_such_module_xyz' listed in policy.import_names" in message
    assert "PYTHONPATH" in message


@pytest.mark.parametrize("module,source,section,pattern", [
    # the module was found: its own import is the culprit, named with its line (not the search path)
    ("broken_plugin_dep", "import os\nimport no_such_dependency_xyz\n", "env",
     r"^module 'broken_plugin_dep' listed in env.import_names was found, but it imports 'no_such_dependency_xyz', "
     r"which is not found \(at .*broken_plugin_dep.py:2\): install it, or fix that import$"),
    ("raising_plugin", "X = 1\nraise RuntimeError('plugin set-up failed')\n", "policy",
     r"^module 'raising_plugin' listed in policy.import_names failed while being imported: RuntimeError: plugin "
     r"set-up failed \(at .*raising_plugin.py:2\)$"),
])
def test_import_names_module_that_fails_names_its_line(plugin_dir: Path, module: str, source: str, section: str,
                                                       pattern: str) -> None:
    (plugin_dir / f"{module}.py").write_text(source)
    with pytest.raises(PluginImportError, match=pattern):
        import_modules(module, section)


def test_import_names_imported_before_the_section_is_built(plugin_dir: Path) -> None:
    with pytest.raises(PluginImportError, match="listed in policy.import_names"):
        compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                            policy=dict(type="dqn", import_names=["no_such_module_xyz"])))
    with pytest.raises(PluginImportError, match="listed in env.import_names"):
        compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1", import_names=["no_such_module_xyz"]),
                            policy=dict(type="dqn")))


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: importlib.metadata.EntryPoint) -> list:
    calls: list = []

    def entry_points(**kwargs):
        calls.append(kwargs)
        return [ep for ep in eps if ep.group == kwargs.get("group")]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    return calls


def test_entry_point_plugins_register_on_first_miss(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_widget_plugin(plugin_dir, "widget_plugin_ep", name="ep_gear")
    calls = _fake_entry_points(monkeypatch, importlib.metadata.EntryPoint(
        name="my_widgets", value="widget_plugin_ep", group=registry.PLUGIN_GROUP))
    holder = importlib.import_module("reg_holder_mod")
    assert "widget_plugin_ep" not in sys.modules
    gear = holder.WIDGET.get("ep_gear")
    assert gear.__module__ == "widget_plugin_ep"
    assert calls == [{"group": "ding_lite.plugins"}]
    with pytest.raises(UnknownTypeError):  # plugins are scanned once, not on every miss
        holder.WIDGET.get("still_unknown")
    assert len(calls) == 1


def test_broken_entry_point_plugin_names_itself(plugin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, importlib.metadata.EntryPoint(
        name="bad_plugin", value="broken_plugin_missing_xyz", group=registry.PLUGIN_GROUP))
    with pytest.raises(PluginImportError, match="plugin entry point 'bad_plugin' \\(broken_plugin_missing_xyz\\)"):
        Registry("widget").get("anything")


def test_di_engine_registry_names_are_public() -> None:
    # DI-engine users write `from ding.utils import POLICY_REGISTRY`; the same names work here, from both modules.
    import ding_lite.utils as utils

    for name in ("POLICY", "MODEL", "ENV", "ENV_MANAGER", "BUFFER", "COLLECTOR", "EVALUATOR", "LEARNER_HOOK",
                 "OPPONENT"):
        reg = getattr(registry, f"{name}_REGISTRY")
        assert getattr(utils, f"{name}_REGISTRY") is reg
        assert getattr(registry, name) is reg  # the short name is an alias of the same table
        assert registry.ALL_REGISTRIES[reg.kind] is reg
    assert "ppo" in utils.POLICY_REGISTRY.names()


def test_concepts_page_lists_every_builtin_registration() -> None:
    # docs/concepts.md's registry table names every type that ding_lite itself registers, in its registry's row.
    text = (Path(__file__).resolve().parents[1] / "docs" / "concepts.md").read_text()
    for reg in registry.ALL_REGISTRIES.values():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{reg.kind.upper()}_REGISTRY` |")), None)
        assert row is not None, f"docs/concepts.md has no row for {reg.kind.upper()}_REGISTRY"
        builtins = [n for n in reg.names() if getattr(reg.get(n), "__module__", "").startswith("ding_lite.")]
        missing = [n for n in builtins if f"`{n}`" not in row]
        assert not missing, f"docs/concepts.md's {reg.kind} row lacks {missing}"


def test_old_short_names_warn_and_name_the_registry() -> None:
    with pytest.warns(DeprecationWarning, match="POLICY is now called POLICY_REGISTRY"):
        from ding_lite.registry import POLICY  # noqa: F401 (the import itself is the test)
    assert registry.__getattr__("ENV") is registry.ENV_REGISTRY
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_REGISTRY'"):
        registry.__getattr__("NOT_A_REGISTRY")


def test_code_and_docs_use_one_name_per_registry() -> None:
    import re
    from pathlib import Path

    root = Path(registry.__file__).resolve().parents[1]
    short = re.compile(r"\b(POLICY|MODEL|ENV|ENV_MANAGER|BUFFER|COLLECTOR|EVALUATOR|LEARNER_HOOK|OPPONENT)"
                       r"(\.(register|get|build|names)\b|\s*=\s*\w+_REGISTRY)")
    files = [p for d in ("ding_lite", "dizoo", "docs", "benchmarks") for p in (root / d).rglob("*.py")]
    files += list((root / "docs").rglob("*.md")) + [root / "README.md"]
    offenders = [f"{p.relative_to(root)}: {m.group(0)}" for p in files for m in short.finditer(p.read_text())]
    assert not offenders, "short registry names in use:\n" + "\n".join(offenders)


def test_an_import_path_whose_module_needs_a_missing_package_names_that_package(tmp_path, monkeypatch):
    (tmp_path / "game_needing_a_package.py").write_text("import no_such_package_xyz\n\ndef env():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="needs module 'no_such_package_xyz', which is not installed"):
        import_object("game_needing_a_package:env")
    with pytest.raises(ConfigError, match="give 'package.module:callable'"):  # a wrong path is still told so
        import_object("no_such_game_module_xyz:env")


@pytest.mark.parametrize("names", [5, [5], ["ok_module", None], {"a": 1}])
def test_import_names_that_are_not_module_names_are_a_config_error(names) -> None:
    with pytest.raises(ConfigError, match=r"policy.import_names must be a list of module names \(strings"):
        import_modules(names, "policy")


@pytest.mark.parametrize("line,says", [
    ("from ding_lite.torch_utils import Adam",
     r"ding_lite has no module 'ding_lite.torch_utils'; use torch\.optim\.Adam for Adam, .*; DI-engine's helpers"),
    ("from ding_lite.utils import POLICY_REGISTRY, split_data_generator",
     r"cannot import name 'split_data_generator' from 'ding_lite.utils' .*; use for idx in torch\.randperm\(n\)"
     r"\.split\(batch_size\).*; DI-engine's helpers"),
    # the line names the replacement itself (before: only the docs section)
    ("from ding_lite.rl_utils import q_nstep_td_data, q_nstep_td_error",
     r"cannot import name 'q_nstep_td_data' .*; use ding_lite\.rl_utils\.nstep_return\(.*td_error_loss\(.*; "
     r"DI-engine's helpers"),
    ("from ding_lite.rl_utils import gae, gae_data", r".*'gae_data' .*; use ding_lite\.rl_utils\.gae\(reward, value, "
                                                    r"next_value, terminated, truncated, gamma, lam\)"),
    ("from ding_lite.rl_utils import ppo_data, ppo_error",
     r".*'ppo_data' .*; use ding_lite\.rl_utils\.ppo_policy_loss.*"),
    ("from ding_lite.model import model_wrap", r".*'model_wrap' .*; use self\._model itself \(no wrappers\).*"),
    ("from ding_lite.utils.data import default_collate", r".*no module 'ding_lite.utils.data'; use self\.obs_tensor.*"),
    # a DI-engine name without an entry still points to the docs
    ("from ding_lite.utils import set_pkg_seed", r"cannot import name 'set_pkg_seed' from 'ding_lite.utils' \([^;]*\); "
                                                r"DI-engine's helpers"),
])
def test_a_di_engine_helper_ding_lite_lacks_points_to_its_replacement(plugin_dir: Path, line: str, says: str) -> None:
    """A DI-engine port imports DI-engine's helpers under the renamed package; before, the line said to check the
    module path and PYTHONPATH, which cannot help."""
    (plugin_dir / "broken_plugin_di_helper.py").write_text(line + "\n")
    with pytest.raises(PluginImportError, match=r"'broken_plugin_di_helper' listed in policy.import_names: " + says +
                       r" .* under 'DI-engine's helpers' in docs/coming_from_di_engine.md"):
        import_modules(["broken_plugin_di_helper"], "policy")


def test_a_module_that_fails_while_imported_is_named(plugin_dir: Path) -> None:
    """Its own error (not an ImportError) becomes one PluginImportError naming the module and the section."""
    (plugin_dir / "broken_plugin_raises.py").write_text("raise ValueError('bad constant')\n")
    with pytest.raises(PluginImportError, match=r"module 'broken_plugin_raises' listed in env.import_names failed "
                                                 r"while being imported: ValueError: bad constant"):
        import_modules(["broken_plugin_raises"], "env")


def test_every_builtin_type_is_found_in_a_fresh_process() -> None:
    # A lookup in a process that imported nothing else finds every built-in docs/concepts.md lists: before, the
    # 'plateau' evaluator and the 'random' opponent were registered only once their modules happened to be imported
    # (`--set policy.eval.evaluator.type=plateau` was an unknown type).
    import subprocess

    from conftest import cli_env

    code = ("from ding_lite.registry import EVALUATOR_REGISTRY as E, OPPONENT_REGISTRY as O\n"
            "E.get('plateau'); O.get('random')\n"
            "print(E.names(), O.names())")
    proc = subprocess.run([sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['interaction', 'plateau'] ['random']"


def test_every_replacement_named_for_a_di_engine_helper_exists() -> None:
    """The one-line errors name ding_lite functions (ding_lite/di_engine_names.py): each must be importable where the
    line says, and no DI-engine name listed there may exist in ding_lite (its import would then not fail)."""
    import importlib
    import re

    from ding_lite import di_engine_names

    named = set()
    for text in [*di_engine_names.NAMES.values(), *di_engine_names.MODULES.values()]:
        named.update(re.findall(r"ding_lite(?:\.\w+)+", text))
    assert named
    for path in sorted(named):
        module, _, attr = path.rpartition(".")
        assert hasattr(importlib.import_module(module), attr), path
    for module in ("ding_lite.rl_utils", "ding_lite.model", "ding_lite.utils", "ding_lite.policy"):
        clash = set(vars(importlib.import_module(module))) & set(di_engine_names.NAMES)
        assert not clash, f"{module} has {clash}: drop them from di_engine_names.NAMES"


def test_di_engines_call_form_registers_the_object() -> None:
    # register(name, obj) took obj for force_overwrite and returned a decorator: nothing registered, silently
    reg = Registry("widget")

    class Gear:
        pass

    class OtherGear:
        pass

    assert reg.register("gear", Gear) is Gear
    assert reg.get("gear") is Gear and reg.registered_in("gear") == __name__
    with pytest.raises(DuplicateRegistrationError, match="already registered"):
        reg.register("gear", OtherGear)
    reg.register("gear", OtherGear, force_overwrite=True)
    assert reg.get("gear") is OtherGear
