"""Layering: the modules below the pipelines (everything but ``ding_lite/entry/``, the CLI and the package's lazy
top-level names) never import a pipeline, by an import statement or by a module name in a string (a registry's
built-in modules, an ``import_names`` default); no two modules import each other, directly or round a circle; the
config layer learns about pipeline-owned sections through ``CONFIG_SECTION_REGISTRY``."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import ding_lite

pytestmark = pytest.mark.unittest

PACKAGE = Path(ding_lite.__file__).resolve().parent
UPPER = ("entry", "cli.py", "__init__.py", "__main__.py")  # the pipelines, the command line, the lazy facade
MODULE_STRING = re.compile(r"ding_lite(\.\w+)+(:\w+)?")  # 'ding_lite.gsl.plateau', 'pkg.module:attr'


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


def _string_imports(source: str) -> list[tuple[int, str]]:
    """Every string constant of ``source`` that is a ding_lite module name (``importlib.import_module`` and the
    registries import such names): ``(line, dotted name)``."""
    return sorted((node.lineno, node.value.partition(":")[0]) for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and MODULE_STRING.fullmatch(node.value))


def _static_imports(source: str, module: str, is_package: bool) -> list[str]:
    """The modules ``source`` imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(source)
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                   ast.unparse(node.test) for n in ast.walk(node)}
    kept = "\n".join(ast.unparse(node) for node in ast.walk(tree)
                      if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only)
    return [name for _, name in _imported_modules(kept, module, is_package)]


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle() -> None:
    modules = _modules()
    graph = {name: {m for m in _static_imports(path.read_text(), name, path.name == "__init__.py")
                    if m in modules and m != name}
             for name, path in modules.items()}
    circles = _circles(graph)
    assert not circles, "modules that import each other (round a circle):\n" + "\n".join(map(str, circles))


def test_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_nothing_below_entry_names_entry_in_a_string() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in UPPER:
            continue
        for line, module in _string_imports(path.read_text()):
            if module == "ding_lite.entry" or module.startswith("ding_lite.entry."):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} names {module}")
    assert not offenders, "lower layers import the pipelines by name:\n" + "\n".join(offenders)


def test_string_scan_sees_registry_lists_and_import_paths() -> None:
    source = ('R = Registry("x", ["ding_lite.entry.parallel"])\n'
              'f = import_object("ding_lite.entry.gsl:gsl_pipeline")\n"""Docs name ding_lite.entry.serial."""\n')
    assert [name for _, name in _string_imports(source)] == ["ding_lite.entry.parallel", "ding_lite.entry.gsl"]


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
