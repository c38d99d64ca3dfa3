"""The docs pages stay true to the code: their links resolve, their command lines parse with the CLI's parser, and
the dizoo commands compile (or fail with the error line the page prints under them)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, cli_env

from ding_lite.build import load_config
from ding_lite.cli import build_parser
from ding_lite.entry.plot import build_plot_parser
from ding_lite.entry.sweep import build_sweep_parser
from ding_lite.errors import DingLiteError

pytestmark = pytest.mark.unittest

DOCS = REPO_ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
# Feature pages that index.md links before their branches land (see its "Features" section).
PENDING_PAGES: set[str] = set()  # feature pages written on branches not merged yet

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```(\w*)\n(.*?)```", re.S)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def test_pages_exist() -> None:
    names = {p.name for p in PAGES}
    assert {"index.md", "quickstart.md", "concepts.md", "config_reference.md", "tutorial_custom_policy.md",
            "tutorial_custom_env.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_resolve(page: Path) -> None:
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if path in PENDING_PAGES:
            continue
        assert resolved.exists(), f"{page.name}: link to missing {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: no heading for #{anchor} in {resolved.name}"


def _commands(page: Path) -> list[tuple[list[str], str]]:
    """Each ``ding_lite ...`` / ``python -m ding_lite ...`` line of a bash block: (argv after the program, the
    comment line that follows it, if any)."""
    out = []
    for lang, block in FENCE.findall(page.read_text()):
        if lang not in ("bash", ""):
            continue
        lines = block.replace("\\\n", " ").splitlines()
        for i, line in enumerate(lines):
            if not re.match(r"^(\$ )?(\w+=\S+ )*(python -m )?ding_lite ", line.strip()):
                continue
            words = shlex.split(line.strip().removeprefix("$ "), comments=True)
            while words and re.match(r"^\w+=", words[0]):  # VAR=value prefixes
                words = words[1:]
            if words[:3] == ["python", "-m", "ding_lite"]:
                argv = words[3:]
            elif words[:1] == ["ding_lite"]:
                argv = words[1:]
            else:
                continue
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out.append((argv, following.removeprefix("# ") if following.startswith("# ding_lite:") else ""))
    return out


COMMANDS = [(page.name, argv, expected) for page in PAGES for argv, expected in _commands(page)]


def test_pages_hold_commands() -> None:
    assert len([c for c in COMMANDS if c[0] == "quickstart.md"]) >= 8


@pytest.mark.parametrize("page,argv,expected", COMMANDS, ids=[f"{c[0]}:{' '.join(c[1])[:60]}" for c in COMMANDS])
def test_commands_parse_and_dizoo_configs_compile(page: str, argv: list[str], expected: str) -> None:
    if argv[:2] == ["-m", "plot"]:  # folders, not a config: its own parser
        build_plot_parser().parse_args(argv)
        return
    parser = build_sweep_parser() if argv[:2] == ["-m", "sweep"] else build_parser()  # sweep: its own options
    args = parser.parse_args(argv)
    if not args.config.startswith("dizoo/"):
        return  # experiment folders and tutorial configs: run by test_tutorial.py or made by an earlier command
    assert (REPO_ROOT / args.config).is_file(), f"{page}: no config {args.config}"
    try:
        load_config(REPO_ROOT / args.config, strict=args.strict, overrides=args.overrides)
    except DingLiteError as exc:
        assert expected == f"ding_lite: error: {exc}", f"{page}: {' '.join(argv)} fails: {exc}"
    else:
        assert not expected, f"{page}: {' '.join(argv)} was expected to fail with {expected!r}"


def test_scripted_opponent_snippet_runs() -> None:
    # selfplay.md's scripted opponent, as shown: it registers and plays legal moves (a subprocess: the registry stays
    # as the other tests left it).
    block = next(code for lang, code in FENCE.findall((DOCS / "selfplay.md").read_text())
                 if lang == "python" and "OPPONENT_REGISTRY.register" in code)
    check = ("\nfrom ding_lite.registry import OPPONENT_REGISTRY as R\n"
             "mask = np.array([[True, False, True], [False, True, False]])\n"
             "actions = R.get('my_player')(seed=0).act(np.zeros((2, 3), np.float32), mask)\n"
             "assert mask[np.arange(2), actions].all(), actions\n")
    proc = subprocess.run([sys.executable, "-c", block + check], env=cli_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


# A config fragment a page shows on its own (``env=dict(...)``, ``policy=dict(...)``) is what a reader pastes into a
# config: it must compile as written, next to a minimal rest (a dizoo env type names the module that registers it).
FRAGMENT = re.compile(r"^(env|policy)=dict\(", re.M)
REST = {"env": dict(type="gymnasium", env_id="CartPole-v1"), "policy": dict(type="dqn")}
FRAGMENTS = [(page.name, code) for page in PAGES for lang, code in FENCE.findall(page.read_text())
             if lang == "python" and FRAGMENT.match(code)]


@pytest.mark.parametrize("page,code", FRAGMENTS, ids=[f"{p}:{c.split('(')[0]}" for p, c in FRAGMENTS])
def test_config_fragments_compile(page: str, code: str) -> None:
    if "pettingzoo" in code:
        pytest.importorskip("pettingzoo")
    fragment = eval(f"dict({code.strip()}\n)")  # the fragment is keyword arguments: env=dict(...), ...
    try:
        load_config({**REST, **fragment}, strict=True)
    except DingLiteError as exc:
        pytest.fail(f"{page}: the config fragment does not compile as shown: {exc}")


def test_concepts_registry_table_names_every_dizoo_type() -> None:
    # concepts.md's registry table says what dizoo adds to each registry; it once named 2 of its 5 env types and 2 of
    # its 6 scripted opponents. Every registration under dizoo/ must be named in its registry's row.
    table = (DOCS / "concepts.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+_REGISTRY)` \|.*$", table, re.M)}
    registered = re.compile(r"@(\w+_REGISTRY)\.register\(\"(\w+)\"\)")
    missing = [f"{registry} {name} ({path.relative_to(REPO_ROOT)})"
               for path in sorted((REPO_ROOT / "dizoo").rglob("*.py"))
               for registry, name in registered.findall(path.read_text()) if f"`{name}`" not in rows.get(registry, "")]
    assert not missing, f"concepts.md's registry table does not name: {missing}"


def test_readme_names_every_dizoo_config() -> None:
    # The README's algorithm table is where a new user looks for a config to start from; it left out 9 of them.
    readme = (REPO_ROOT / "README.md").read_text()
    missing = [path.name for path in sorted((REPO_ROOT / "dizoo").glob("*/*/config/*_config.py"))
               if f"`{path.name}`" not in readme]
    assert not missing, f"README.md names no {missing}"


def test_index_links_every_page_of_the_nav() -> None:
    # The home page is the site's table of contents; it left out three pages that mkdocs.yml's nav lists.
    nav = re.findall(r"^\s+- [^:]+: ([\w/]+\.md)$", (REPO_ROOT / "mkdocs.yml").read_text(), re.M)
    linked = set(LINK.findall((DOCS / "index.md").read_text()))
    missing = [page for page in nav if page != "index.md" and not page.startswith("api/") and page not in linked]
    assert nav and not missing, f"index.md does not link {missing}"
