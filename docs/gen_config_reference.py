"""Generate docs/config_reference.md from the components' ``config`` dicts and their inline comments.

The defaults are read from the live classes (so the values are the ones ``compile_config`` merges); the one-line
comments are read from the source of the same dict literals with ``ast`` and ``tokenize``::

    python docs/gen_config_reference.py          # rewrite docs/config_reference.md
    python docs/gen_config_reference.py --check  # exit 1 if docs/config_reference.md is out of date

Covered: the top level, the env section, the pipelines' sections (parallel, log, league, gsl, demo), the policy's
parts no component declares, every env type (built-in and dizoo), and every registered env manager, policy, model,
replay buffer, collector and evaluator, plus the learner.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import io
import pkgutil
import sys
import tokenize
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT = REPO_ROOT / "docs" / "config_reference.md"

if str(REPO_ROOT) not in sys.path:  # document this checkout, not an installed copy
    sys.path.insert(0, str(REPO_ROOT))


# ---- comments of a dict literal --------------------------------------------------------------------------------
def _line_comments(source: str) -> dict[int, str]:
    """Line number -> text of the comment on that line."""
    comments = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    return comments


def _dict_items(node: ast.expr) -> list[tuple[str, ast.expr]] | None:
    """(key, value node) pairs of a ``dict(k=v)`` call or a ``{'k': v}`` literal; None for anything else."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return [(kw.arg, kw.value) for kw in node.keywords if kw.arg is not None]
    if isinstance(node, ast.Dict):
        return [(k.value, v) for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return None


def _comments_of_literal(node: ast.expr, comments: dict[int, str], prefix: str = "") -> dict[str, str]:
    """Dotted key -> comment, for every key of a (nested) dict literal."""
    out: dict[str, str] = {}
    for key, value in _dict_items(node) or []:
        path = prefix + key
        nested = _dict_items(value)
        # A scalar's comment ends its (last) line; a section's comment sits on the line that opens it.
        line = value.lineno if nested is not None else value.end_lineno
        text = comments.get(line or value.lineno) or comments.get(value.lineno)
        if text:
            out[path] = text
        if nested:
            out.update(_comments_of_literal(value, comments, path + "."))
    return out


def _assigned_value(body: list[ast.stmt], name: str) -> ast.expr | None:
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt.value
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
            return stmt.value
    return None


def source_comments(owner: Any, name: str = "config") -> dict[str, str]:
    """Comments of the dict literal assigned to ``name`` in class ``owner`` (or module ``owner``)."""
    source = Path(inspect.getsourcefile(owner) or "").read_text()
    tree = ast.parse(source)
    body: list[ast.stmt] = tree.body
    if inspect.isclass(owner):
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner.__name__]
        if not classes:
            return {}
        body = classes[0].body
    value = _assigned_value(body, name)
    return _comments_of_literal(value, _line_comments(source)) if value is not None else {}


def class_chain_comments(cls: type) -> dict[str, str]:
    """Comments of ``config`` up the class chain (a subclass's comment wins), as merged by default_config()."""
    out: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if "config" in vars(klass):
            out.update(source_comments(klass))
    return out


# ---- rendering ------------------------------------------------------------------------------------------------
def _rows(values: Mapping[str, Any], comments: Mapping[str, str], prefix: str = "") -> Iterator[tuple[str, Any, str]]:
    for key, value in values.items():
        path = prefix + key
        if isinstance(value, Mapping) and value:
            yield from _rows(value, comments, path + ".")
        else:
            yield path, value, comments.get(path, "")


def table(values: Mapping[str, Any], comments: Mapping[str, str], where: str, skip: tuple[str, ...] = (),
          skip_prefix: str | None = None) -> str:
    """A markdown table of every leaf key of ``values``, shown under the dotted prefix ``where`` (less the keys in
    ``skip`` and those starting with ``skip_prefix``)."""
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for path, value, comment in _rows(values, comments):
        if path in skip or (skip_prefix and path.startswith(skip_prefix)):
            continue
        meaning = comment.replace("|", "\\|")
        lines.append(f"| `{where}{path}` | `{value!r}` | {meaning} |")
    return "\n".join(lines)


def _source_link(obj: Any) -> str:
    path = Path(inspect.getsourcefile(obj) or "").resolve()
    try:
        rel = path.relative_to(REPO_ROOT).as_posix()
    except ValueError:  # defined outside this checkout (an installed plugin)
        return f"`{obj.__module__}`"
    return f"`{rel}`"  # a code path, not a link: the docs site holds only docs/ (mkdocs --strict rejects ../)


def _component(title: str, obj: Any, where: str, comments: Mapping[str, str], values: Mapping[str, Any],
               skip: tuple[str, ...] = ()) -> str:
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
    return f"### {title}\n\n`{name}` in {_source_link(obj)}\n\n{table(values, comments, where, skip)}\n"


def _import_dizoo_envs() -> None:
    """Import every dizoo env module so that their env types are registered."""
    import dizoo

    for info in pkgutil.walk_packages(dizoo.__path__, "dizoo."):
        if ".envs." in info.name and not info.ispkg:
            importlib.import_module(info.name)


def render() -> str:
    """The whole reference page."""
    from ding_lite.config import compile as compile_module
    from ding_lite.envs import gym_env
    from ding_lite.registry import (
        BUFFER_REGISTRY,
        COLLECTOR_REGISTRY,
        ENV_MANAGER_REGISTRY,
        ENV_REGISTRY,
        EVALUATOR_REGISTRY,
        MODEL_REGISTRY,
        POLICY_REGISTRY,
    )
    from ding_lite.worker.learner import BaseLearner

    _import_dizoo_envs()
    parts = [HEADER]
    parts.append("## Top level\n")
    parts.append(f"`TOP_LEVEL_DEFAULTS` in {_source_link(compile_module)}\n\n"
                 + table(compile_module.TOP_LEVEL_DEFAULTS, source_comments(compile_module, "TOP_LEVEL_DEFAULTS"),
                         "", skip=("env", "policy")) + "\n")
    parts.append("## Env section\n\nKeys of every `env` section, whatever its type "
                 f"(`ENV_SECTION_DEFAULTS` in {_source_link(gym_env)}):\n\n"
                 + table(gym_env.ENV_SECTION_DEFAULTS, source_comments(gym_env, "ENV_SECTION_DEFAULTS"), "env.")
                 + "\n")
    from ding_lite.distributed import config as parallel

    parts.append("## Parallel section\n\nSettings of the Ray pipeline (`-m parallel`, see [ray.md](ray.md)); the "
                 f"serial pipeline ignores them (`PARALLEL_CONFIG` in {_source_link(parallel)}):\n\n"
                 + table(parallel.PARALLEL_CONFIG, source_comments(parallel, "PARALLEL_CONFIG"), "parallel.") + "\n")
    from ding_lite.utils import trackers

    parts.append("## Log section\n\nWhere every run's scalars go and its console lines "
                 "(see [tracking.md](tracking.md)) "
                 f"(`LOG_CONFIG` in {_source_link(trackers)}):\n\n"
                 + table(trackers.LOG_CONFIG, source_comments(trackers, "LOG_CONFIG"), "log.") + "\n")
    from ding_lite.league import config as league_config
    from ding_lite.league import pool

    parts.append("## League section\n\nSettings of the self-play pipeline (`-m selfplay`, see [selfplay.md]"
                 f"(selfplay.md)); other pipelines ignore them (`LEAGUE_SETTINGS` in {_source_link(league_config)}, "
                 f"`POOL_CONFIG` in {_source_link(pool)}):\n\n"
                 + table(league_config.LEAGUE_CONFIG, {**source_comments(league_config, "LEAGUE_SETTINGS"),
                                                       **source_comments(pool, "POOL_CONFIG")}, "league.") + "\n")
    from ding_lite.gsl import plateau as gsl_parts  # also registers the 'plateau' evaluator

    parts.append("## GSL section\n\nSettings of generalist-specialist learning (`-m gsl`, see [gsl.md](gsl.md)); the "
                 f"other pipelines ignore them (`GSL_CONFIG` in {_source_link(gsl_parts)}):\n\n"
                 + table(gsl_parts.GSL_CONFIG, source_comments(gsl_parts, "GSL_CONFIG"), "gsl.") + "\n")
    from ding_lite.data import demo

    parts.append("## Demo section\n\nSettings of demonstration collection (`-m collect_demo`, see [ppo_dapg.md]"
                 "(ppo_dapg.md); `-m gsl` keeps its specialists' demos by the same success rule) "
                 f"(`DEMO_SECTION_DEFAULTS` in {_source_link(demo)}):"
                 "\n\n" + table(demo.DEMO_SECTION_DEFAULTS, source_comments(demo, "DEMO_SECTION_DEFAULTS"), "demo.")
                 + "\n")
    parts.append("## Policy parts\n\nKeys of every policy's sections that no registered component declares "
                 f"(`POLICY_PART_DEFAULTS` in {_source_link(compile_module)}; the learner's are under "
                 "[Learner](#learner)):\n\n"
                 + table(compile_module.POLICY_PART_DEFAULTS,
                         source_comments(compile_module, "POLICY_PART_DEFAULTS"), "policy.", skip_prefix="learn.")
                 + "\n")
    parts.append("## Env types\n\nKeys an env type adds to the `env` section (`env.type`).\n")
    for name in ENV_REGISTRY.names():
        cls = ENV_REGISTRY.get(name)
        parts.append(_component(f"env type `{name}`", cls, "env.", source_comments(cls), getattr(cls, "config", {})))
    sections = [
        ("Env managers", "env manager", ENV_MANAGER_REGISTRY, "env.manager.",
         "`env.manager.type`, default `'base'`"),
        ("Policies", "policy", POLICY_REGISTRY, "policy.", "`policy.type`; defaults merged up the class chain"),
        ("Models", "model", MODEL_REGISTRY, "policy.model.",
         "`policy.model.type`, default: the policy's `default_model()`"),
        ("Replay buffers", "buffer", BUFFER_REGISTRY, "policy.other.replay_buffer.",
         "`policy.other.replay_buffer.type`, default `'uniform'`; off-policy policies only"),
        ("Collectors", "collector", COLLECTOR_REGISTRY, "policy.collect.collector.",
         "`policy.collect.collector.type`, default `'sample'`"),
        ("Evaluators", "evaluator", EVALUATOR_REGISTRY, "policy.eval.evaluator.",
         "`policy.eval.evaluator.type`, default `'interaction'`"),
    ]
    for title, kind, registry, where, chosen_by in sections:
        parts.append(f"## {title}\n\nChosen by {chosen_by}.\n")
        for name in registry.names():
            cls = registry.get(name)
            if kind == "policy":
                values, comments = cls.default_config(), class_chain_comments(cls)
            else:  # every such section also takes import_names (compile_config adds it to the defaults)
                config = getattr(cls, "config", {})
                values, comments = {**config, "import_names": config.get("import_names", [])}, source_comments(cls)
                comments = {"import_names": "modules imported before this section is built (they register custom "
                                            "types)", **comments}
            comments = {"type": f"registered {kind} type", **comments}
            parts.append(_component(f"{kind} `{name}`", cls, where, comments, values))
    parts.append("## Learner\n\nThe learner is not chosen by type; each key of `hook` configures the learner hook "
                 "of that name (registry `LEARNER_HOOK_REGISTRY`).\n")
    parts.append(_component("`BaseLearner`", BaseLearner, "policy.learn.learner.", source_comments(BaseLearner),
                            BaseLearner.config))
    return "\n".join(parts)


HEADER = """# Config reference

<!-- Generated by docs/gen_config_reference.py from the components' `config` dicts: do not edit by hand. -->

Every default key, with its default and the comment written next to it in the code. `compile_config` merges the
defaults of the components a config names (by `type`) under the user's values; see [concepts](concepts.md#config)
for the rules. Types are checked against the defaults: a key whose default is `None` takes any value (but a bool
never where its name implies a number), `None` is accepted only for such keys and for those whose comment gives it
a meaning (`type`, clips, timeouts, windows, `n_sample`, `discount_factor`, `max_episode_steps`, `exp_name`,
`target_theta`), an int key also takes an integral float (`1e4`), a float key also takes an int. An empty dict
(`{}`) is a section whose keys come from another component (e.g. `policy.model` from the model) or are free.
Numbers are also checked against the range their key's name implies (counts at least 1, learning rates > 0, loss
weights ≥ 0, discount factors and probabilities in [0, 1], no NaN; see [concepts](concepts.md#config), step 6).

`import_names`, `env.import_path` and `policy.collect.augment` name code that ding_lite imports and runs: set them
only to modules you trust, never from untrusted input (see [code a config runs](concepts.md#code-a-config-runs)).

Regenerate after changing a `config` dict: `python docs/gen_config_reference.py`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed page differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUTPUT.is_file() or OUTPUT.read_text() != text:
            print(f"{OUTPUT} is out of date: run python docs/gen_config_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
