"""Reading config files (ding_lite/config/reader.py): both forms, and one clear error per kind of bad file."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.config import parse_override, read_config
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest


def test_reads_dizoo_main_and_create_as_plain_dicts() -> None:
    main, create = read_config(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
    assert type(main) is dict and type(main["policy"]) is dict  # EasyDicts become plain dicts
    assert main["policy"]["collect"]["n_sample"] == 256
    assert create["policy"] == {"type": "ppo"} and create["env"]["type"] == "cartpole"


def test_unified_file_and_main_block_not_run(tmp_path: Path) -> None:
    path = tmp_path / "cfg.py"
    path.write_text("main_config = dict(env=dict(type='gymnasium', env_id='CartPole-v1'), policy=dict(type='dqn'))\n"
                    "if __name__ == '__main__':\n    raise SystemExit('the main block must not run')\n")
    main, create = read_config(path)
    assert main["policy"] == {"type": "dqn"} and create == {}


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found: .*nope.py$"):
        read_config(tmp_path / "nope.py")


def test_a_misspelt_file_name_gets_the_close_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "cartpole_dqn_config.py").write_text("main_config = dict()\n")
    (tmp_path / "other.py").write_text("")
    with pytest.raises(ConfigError, match=r"not found: .*cartpole_dqn_confg.py "
                                          r"\(did you mean .*/cartpole_dqn_config.py\?\)"):
        read_config(tmp_path / "cartpole_dqn_confg.py")


@pytest.mark.parametrize("typo", ["dizoo/classic_contrl/cartpole/config/cartpole_dqn_config.py",
                                  "dizo/classic_control/cartpol/confg/cartpole_dqn_confg.py"])
def test_a_misspelt_folder_gets_the_nearest_existing_config(tmp_path: Path, monkeypatch, typo: str) -> None:
    """Before, only a typo in the file's own name got a suggestion: one in a folder name said just 'not found'."""
    folder = tmp_path / "dizoo" / "classic_control" / "cartpole" / "config"
    folder.mkdir(parents=True)
    (folder / "cartpole_dqn_config.py").write_text("main_config = dict()\n")
    (tmp_path / "dizoo" / "classic_control" / "pendulum").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        read_config(typo)
    assert str(info.value) == (f"config file not found: {typo} (did you mean "
                               f"dizoo/classic_control/cartpole/config/cartpole_dqn_config.py?)")
    with pytest.raises(ConfigError) as info:  # no folder near the missing one: nothing to suggest
        read_config(f"{tmp_path}/path/in/missing_folder/x.py")
    assert str(info.value) == f"config file not found: {tmp_path}/path/in/missing_folder/x.py"


def test_a_folder_is_no_config_file_and_an_experiment_folder_names_its_saved_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file .* is a folder, not a .py config file$"):
        read_config(tmp_path)
    (tmp_path / "total_config.py").write_text("main_config = dict()\n")
    with pytest.raises(ConfigError, match=r"is a folder, not a .py config file: an experiment folder's config is "
                                          r".*total_config.py"):
        read_config(tmp_path)


def test_file_without_main_config_lists_what_it_defines(tmp_path: Path) -> None:
    path = tmp_path / "cfg.py"
    path.write_text("cartpole_dqn_config = dict(env=dict())\n")
    with pytest.raises(ConfigError, match=r"defines no main_config dict \(it defines cartpole_dqn_config\)"):
        read_config(path)


@pytest.mark.parametrize("source,match", [
    ("main_config = dict(\n", "has a syntax error at line"),
    ("import no_such_module_xyz\n", "failed to run at cfg.py:1: ModuleNotFoundError"),
    ("main_config = dict(env=dict(), policy=dict())\ncreate_config = [1]\n", "create_config must be a dict, got list"),
])
def test_bad_files(tmp_path: Path, source: str, match: str) -> None:
    path = tmp_path / "cfg.py"
    path.write_text(source)
    with pytest.raises(ConfigError, match=match):
        read_config(path)


@pytest.mark.parametrize("text,expected", [
    ("a.b=1", (["a", "b"], 1)),
    ("a=1e4", (["a"], 1e4)),
    ("a=None", (["a"], None)),
    ("a=true", (["a"], "true")),  # not a Python literal: kept as the string
    ("a='x y'", (["a"], "x y")),
    ("a=(1, 2)", (["a"], (1, 2))),
    ("a.b.c= spaced ", (["a", "b", "c"], "spaced")),
])
def test_parse_override(text: str, expected) -> None:
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["env.import_names=[my_env]", "policy.model.encoder_hidden_size_list=[64, x]",
                                  "env.kwargs={size: 5}"])
def test_an_override_meant_as_a_container_but_not_a_literal_is_refused(text: str) -> None:
    # as a string, '[my_env]' would be imported as a module of that name, '{size: 5}' passed as one string
    with pytest.raises(ConfigError, match=r"is not a Python literal: quote the strings inside it"):
        parse_override(text)


def test_a_file_that_is_not_python_says_what_a_config_is(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text("env:\n  type: cartpole\npolicy:\n  type: dqn\n")
    with pytest.raises(ConfigError, match=r"cfg.yaml is not Python \(syntax error at line 1: .*\): a ding_lite config "
                                          r"is a .py file that defines main_config"):
        read_config(path)


def test_config_folders_of_a_saved_config_are_searched_and_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("sys.path", list(sys.path))
    monkeypatch.setattr("ding_lite.registry._CONFIG_FOLDERS", [])
    path = tmp_path / "total_config.py"
    path.write_text(f"config_folders = [{str(tmp_path / 'src')!r}]\nmain_config = dict(policy=dict(type='dqn'))\n")
    read_config(path)
    assert str(tmp_path / "src") in sys.path  # searched for import_names, as the original's folder
    path.write_text("config_folders = 'src'\nmain_config = dict(policy=dict(type='dqn'))\n")
    with pytest.raises(ConfigError, match="config_folders must be a list of folder paths, got 'src'"):
        read_config(path)


@pytest.mark.unittest
def test_missing_dizoo_config_outside_a_checkout_names_the_installed_copy(tmp_path: Path, monkeypatch) -> None:
    # after `pip install ding_lite` the docs' `-c dizoo/...` paths are not in the current folder: say where they are
    monkeypatch.chdir(tmp_path)
    import dizoo

    installed = Path(dizoo.__file__).parent / "classic_control" / "cartpole" / "config" / "cartpole_dqn_config.py"
    with pytest.raises(ConfigError) as info:
        read_config("dizoo/classic_control/cartpole/config/cartpole_dqn_config.py")
    assert str(info.value) == ("config file not found: dizoo/classic_control/cartpole/config/cartpole_dqn_config.py "
                               f"(the installed copy is {installed})")
    with pytest.raises(ConfigError, match="not found: dizoo/nope.py$"):
        read_config("dizoo/nope.py")


@pytest.mark.parametrize("module", ["namespace", "missing"])
def test_missing_dizoo_config_without_an_installed_dizoo_is_just_not_found(tmp_path: Path, monkeypatch,
                                                                           module: str) -> None:
    # a dizoo/ folder of the user's own (no __init__.py) in the current folder is imported as a namespace package,
    # whose __file__ is None; and dizoo may not be importable at all: the error stays the one line
    import types

    monkeypatch.chdir(tmp_path)
    fake = types.ModuleType("dizoo") if module == "namespace" else None
    if fake is not None:
        fake.__file__ = None
    monkeypatch.setitem(sys.modules, "dizoo", fake)
    with pytest.raises(ConfigError, match="^config file not found: dizoo/classic_control/cartpole_dqn_config.py$"):
        read_config("dizoo/classic_control/cartpole_dqn_config.py")
