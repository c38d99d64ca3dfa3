"""Wiring: parts get their collaborators in their constructors (or through a method that says what it means, such
as ``learner.log_to(logger)`` or ``collector.continue_from(env_step)``); no code of the package sets an attribute of
another object after its construction (``learner.logger = ...``, ``collector.env_step = ...``,
``a.b = c.d = ...``).

Checked on the source with ``ast``: every assignment (plain, augmented, annotated, tuple targets) whose target is an
attribute of something other than ``self`` / ``cls`` or of an object's own private member (``self._state.count``)
must be in :data:`ALLOWED`, with the reason it is legitimate; an entry that no longer matches anything must go.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import ding_lite

pytestmark = pytest.mark.unittest

PACKAGE = Path(ding_lite.__file__).resolve().parent

# target (as ast.unparse writes it) -> why setting it from outside is legitimate
ALLOWED: dict[str, str] = {
    # third-party objects whose API is attribute assignment
    "p.grad": "torch: a parameter's gradient is freed by setting it to None, or set to one computed by hand",
    "ctx.n_layers": "torch: an autograd Function keeps what its backward needs on its context object",
    "ctx.obs_size": "torch: an autograd Function keeps what its backward needs on its context object",
    "out._metadata": "torch: a state dict's version info is an attribute of the dict, copied with it",
    "module.log_std": "torch: a model builder registers a parameter on the nn.Module it is building",
    "module.log_std_head": "torch: a model builder registers a submodule on the nn.Module it is building",
    "ray_constants.ENABLE_RAY_CLUSTER": "Ray: a module-level switch read when the embedded instance starts",
    "logger.propagate": "stdlib logging: the package logger's configuration",
    "handler._ding_lite_console": "stdlib logging: marks the console handler this package added (added once)",
    "self.rng.bit_generator.state": "numpy: a generator's state is restored by assigning its bit generator's state",
    "pool.spaces": "envpool: the pool object built just before, given the float32 spaces envpool makes lazily",
    "pool.time_limit": "envpool: the pool object built just before, given the time limit ding_lite cuts at",
    # the compiled config, filled in while it is resolved (before any part is built from it)
    "config.seed": "config resolution: the run's seed written into the compiled config",
    "model.obs_shape": "config resolution: model shapes filled from the env's spaces",
    "model.action_shape": "config resolution: model shapes filled from the env's spaces",
    "model.action_space": "config resolution: model shapes filled from the env's spaces",
    "model.image_scale": "config resolution: an image observation's scale filled from the env's space (pixels or not)",
    "cfg.exp_name": "config resolution: the run's own experiment folder written into the saved config",
    "cfg.env.end_when_out": "config resolution: a self-play game ends when the learner's seats are out",
}

# plain records (dataclasses) that a module fills field by field: (file, variable name) -> why
RECORDS: dict[tuple[str, str], str] = {
    ("ding_lite/entry/gsl.py", "state"): "GSL's typed state (GslState), filled as its phases finish (result.json)",
    ("ding_lite/gsl/state.py", "state"): "GSL's typed state (GslState), read back from result.json",
}


def _attribute_targets(node: ast.AST) -> Iterator[ast.Attribute]:
    """The attribute targets of an assignment statement (tuple and starred targets unpacked; subscripts are item
    writes, not attribute writes)."""
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets += target.elts
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        elif isinstance(target, ast.Attribute):
            yield target


def _own(target: ast.Attribute) -> bool:
    """``self.x`` / ``cls.x``, or ``self._x.y...``: the object's own attribute, or one of its private members'."""
    base = target.value
    if isinstance(base, ast.Name):
        return base.id in ("self", "cls")
    while isinstance(base, ast.Attribute):
        if isinstance(base.value, ast.Name) and base.value.id == "self":
            return base.attr.startswith("_")
        base = base.value
    return False


@cache  # the package is scanned once for both tests
def outside_writes(package: Path) -> list[tuple[str, int, str]]:
    """``(file, line, target)`` of every assignment in ``package`` to another object's attribute."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _attribute_targets(node):
                if not _own(target):
                    found.append((str(path.relative_to(package.parent)), target.lineno, ast.unparse(target)))
    return found


@pytest.mark.unittest
def test_no_part_sets_another_objects_attributes():
    bad = [f"{file}:{line}: {target} = ..." for file, line, target in outside_writes(PACKAGE)
           if target not in ALLOWED and (file, target.split(".")[0]) not in RECORDS]
    assert not bad, "set through a constructor argument or a method of the object instead:\n" + "\n".join(bad)


@pytest.mark.unittest
def test_every_allowed_write_still_exists():
    used = {target for _, _, target in outside_writes(PACKAGE)}
    assert not set(ALLOWED) - used, f"remove these entries of ALLOWED: {sorted(set(ALLOWED) - used)}"
    records = {(file, target.split(".")[0]) for file, _, target in outside_writes(PACKAGE)}
    assert not set(RECORDS) - records, f"remove these entries of RECORDS: {sorted(set(RECORDS) - records)}"


@pytest.mark.unittest
def test_the_scan_finds_the_wiring_it_forbids(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "wiring.py").write_text(
        "def wire(learner, parts, logger):\n"
        "    learner.logger = parts.weights.logger = logger\n"
        "    parts.collector.env_step, n = 5, 1\n"
        "    parts.count += 1\n"
        "    parts.table[0] = 1\n"  # an item write: not an attribute
        "class Part:\n"
        "    def __init__(self):\n"
        "        self.x = 1\n"
        "        self._state.count = 0\n"
        "        self.public.count = 0\n")
    found = [target for _, _, target in outside_writes(tmp_path / "pkg")]
    assert sorted(found) == ["learner.logger", "parts.collector.env_step", "parts.count", "parts.weights.logger",
                             "self.public.count"]


# the four training pipelines: module -> (game choice, collection choice) passed to RunParts.for_run
PIPELINE_CHOICES = {
    "serial": ("PlainEnv", "LocalCollection"),
    "parallel": ("PlainEnv", "partial(RayCollection, ray)"),
    "selfplay": ("SelfPlayGame", "LocalCollection"),
    "parallel_selfplay": ("SelfPlayGame", "partial(RayCollection, ray)"),
}
PARTS_METHODS = {"attach", "stats", "final_eval", "env_restarts"}  # what the train loop calls on a run's parts


def _classes(package: Path) -> Iterator[tuple[str, ast.ClassDef]]:
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                yield str(path.relative_to(package)), node


def test_the_training_pipelines_compose_one_parts_class_from_two_choices():
    """A run's parts are one class (``RunParts``) of two independent choices, not a class per pipeline: every
    training pipeline passes its game and its collection to ``RunParts.for_run``; no other class implements what the
    loop calls on the parts; no collector actor or driver-side collector is subclassed for a mode."""
    for module, choices in PIPELINE_CHOICES.items():
        tree = ast.parse((PACKAGE / "entry" / f"{module}.py").read_text())
        calls = [tuple(ast.unparse(a) for a in node.args[1:]) for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and ast.unparse(node.func) == "RunParts.for_run"]
        assert calls == [choices], f"entry/{module}.py"
    parts_like = [(where, c.name) for where, c in _classes(PACKAGE)
                  if {f.name for f in c.body if isinstance(f, ast.FunctionDef)} >= PARTS_METHODS
                  and "Protocol" not in {ast.unparse(b) for b in c.bases}]
    assert parts_like == [("runtime/parts.py", "RunParts")]
    subclassed = [(where, c.name) for where, c in _classes(PACKAGE)
                  if {ast.unparse(b) for b in c.bases} & {"CollectorShell", "RemoteCollectors", "RunParts"}]
    assert subclassed == []
