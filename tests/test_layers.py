"""Layering: the modules below the pipelines (everything but ``ding_lite/entry/`` and the CLI) never import a
pipeline; the config layer learns about pipeline-owned sections through ``CONFIG_SECTION_REGISTRY``."""
from __future__ import annotations

import ast
from pathlib import Path

import ding_lite

PACKAGE = Path(ding_lite.__file__).resolve().parent
UPPER = ("entry", "cli.py")  # the pipelines and the command line, which wire everything


def _imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every module an ``import`` statement of ``source`` (the text of module ``module``) names, function-level ones
    included, relative ones made absolute: ``(line, dotted name)``."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against the module's package
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_nothing_below_entry_imports_entry() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in UPPER:
            continue
        module_name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for line, module in _imported_modules(path.read_text(), module_name, path.name == "__init__.py"):
            if module == "ding_lite.entry" or module.startswith("ding_lite.entry."):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert not offenders, "lower layers import the pipelines:\n" + "\n".join(offenders)


def test_scan_sees_function_level_and_relative_imports() -> None:
    # the scan is only worth something if it finds the forms an offender would use
    source = "import os\n\ndef f():\n    from ..entry import parallel\n    import ding_lite.entry.serial\n"
    names = {name for _, name in _imported_modules(source, "ding_lite.config.compile")}
    assert {"os", "ding_lite.entry", "ding_lite.entry.parallel", "ding_lite.entry.serial"} <= names
    names = {name for _, name in _imported_modules("from .compile import x\n", "ding_lite.config", is_package=True)}
    assert "ding_lite.config.compile" in names


def test_builtin_config_sections_are_registered() -> None:
    from ding_lite.config.compile import compile_config
    from ding_lite.registry import CONFIG_SECTION_REGISTRY

    assert {"demo", "parallel"} <= set(CONFIG_SECTION_REGISTRY.names())
    cfg = compile_config(dict(env=dict(env_id="CartPole-v1"), policy=dict(type="dqn")))
    for name in CONFIG_SECTION_REGISTRY.names():
        assert dict(cfg[name]) == CONFIG_SECTION_REGISTRY.get(name)
