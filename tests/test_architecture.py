"""The import graph (docs/architecture.md): every arrow between the rooms points one way.

Parsed, not imported: each module's `import` and `from ... import` statements anywhere in the file
(inside functions and `if TYPE_CHECKING:` too), so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("controller", "devices", "headoffice", "shared")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, text: str | None = None) -> set[str]:
    """The first-party modules `path` imports (absolute; relative imports resolved); `text`
    instead of the file's own when given."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, filename=str(path))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            # `from controller import logs` imports controller.logs, not just controller.
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in ROOTS}


def graph() -> dict[str, set[str]]:
    modules: dict[str, set[str]] = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            modules[module_name(path)] = imports_of(path)
    known = set(modules)
    # Keep only names that are modules ("from x import name" also names functions).
    return {m: {i for i in imps if i in known} for m, imps in modules.items()}


GRAPH = graph()


def room(module: str) -> str:
    """controller.<room> for controller's modules and packages; devices / headoffice whole."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "controller" and len(parts) > 1 else parts[0]


def arrows_from(prefix: str) -> dict[str, set[str]]:
    return {
        m: {i for i in imps if room(i) != room(m)}
        for m, imps in GRAPH.items()
        if m == prefix or m.startswith(prefix + ".")
    }


def test_the_graph_is_read() -> None:
    # The parser sees the arrows it is meant to police (a guard against a vacuous pass).
    assert "controller.daemon.service" in GRAPH
    assert "controller.extensions.base" in GRAPH["controller.extensions.link"]
    assert "controller.logs" in GRAPH["controller.daemon.main"]  # `from controller import logs`
    assert "controller.errors" in GRAPH["controller.games.uth.cards"]


def test_games_import_nothing_of_controller_but_errors() -> None:
    bad = {
        m: sorted(i for i in imps if i != "controller.errors")
        for m, imps in arrows_from("controller.games").items()
    }
    assert {m: i for m, i in bad.items() if i} == {}


def test_rounds_import_only_games_events_and_errors() -> None:
    allowed = {"controller.games", "controller.events", "controller.errors"}
    bad = {m: sorted(i for i in imps if room(i) not in allowed)
           for m, imps in arrows_from("controller.rounds").items()}
    assert {m: i for m, i in bad.items() if i} == {}


def test_only_the_daemon_imports_the_daemon() -> None:
    """Extensions, the CLI, the link, head office: none reaches into controller.daemon (the
    extensions see the table through extensions.base.Table)."""
    bad = {
        m: sorted(i for i in imps if room(i) == "controller.daemon")
        for m, imps in GRAPH.items()
        if room(m) != "controller.daemon"
    }
    assert {m: i for m, i in bad.items() if i} == {}


def test_the_shared_bottom_imports_nothing_above_it() -> None:
    # What every room may use; they use nothing but errors and the registries of kinds
    # (controller/events.py, which imports nothing of controller).
    for bottom in ("controller.errors", "controller.money", "controller.clock",
                   "controller.codes", "controller.errorlog", "controller.meters",
                   "controller.events"):
        assert GRAPH[bottom] <= {"controller.errors", "controller.events", "shared.money"}, bottom
    assert GRAPH["controller.events"] == set()


def test_shared_imports_no_room_and_devices_import_only_shared() -> None:
    # shared/ is what every program may use (the one money formatter): it imports none of them;
    # devices/ (the drivers) import nothing of controller or head office, only shared/.
    assert "shared.money" in GRAPH["devices.meter.interface"]  # not a vacuous pass
    assert {m: imps for m, imps in arrows_from("shared").items() if imps} == {}
    bad = {m: sorted(i for i in imps if i.split(".")[0] not in ("devices", "shared"))
           for m, imps in arrows_from("devices").items()}
    assert {m: i for m, i in bad.items() if i} == {}


def test_no_cycle_between_rooms() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for m, imps in GRAPH.items():
        for i in imps:
            if room(i) != room(m) and room(i) != "controller":  # controller/__init__: version
                edges[room(m)].add(room(i))
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(edges[node]):
            if nxt in path:
                cycles.append([*path[path.index(nxt):], nxt])
            elif len(path) < 12:
                visit(nxt, [*path, nxt])

    for start in sorted(edges):
        visit(start, [start])
    assert cycles == []


@pytest.mark.parametrize(
    "source",
    [
        "from controller.daemon.service import TableService\n",
        "def f():\n    from controller.daemon import service\n",
        "from ..daemon import supervisor\n",
    ],
)
def test_a_back_arrow_would_be_seen(source: str) -> None:
    # The extension importing the daemon, even lazily or relatively, is an arrow the parser sees.
    link = REPO / "controller" / "extensions" / "link.py"
    assert any(room(i) == "controller.daemon" for i in imports_of(link, source))


# -- module size (issue 14: "small modules named for what they hold") ------------------------
MAX_LINES = 500
SIZE_ROOTS = (*ROOTS, "bench", "image")
# Not ours: the VM build's output (image/vm/.gitignore), a whole arm64 root with Debian's Python
# in it, and being written while `.ci/run` builds it beside this suite.
NOT_OURS = ("image/vm/work", "image/vm/work2")


def our_modules(repo: Path = REPO, roots: tuple[str, ...] = SIZE_ROOTS) -> list[Path]:
    """Every .py file under `roots`, never descending into NOT_OURS."""
    skip = {repo / d for d in NOT_OURS}
    out: list[Path] = []
    for root in roots:
        for here, dirs, files in os.walk(repo / root):
            dirs[:] = sorted(d for d in dirs if Path(here, d) not in skip)
            out += [Path(here, f) for f in sorted(files) if f.endswith(".py")]
    return out


def long_modules_without_a_reason(paths: list[Path]) -> list[str]:
    """Modules past MAX_LINES whose docstring does not say why ("... lines because ...")."""
    out = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if "lines because" not in " ".join(doc.split()):
            name = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
            out.append(f"{name}: {text.count(chr(10))} lines")
    return out


def test_no_module_past_500_lines_without_its_reason_at_the_top() -> None:
    paths = our_modules()
    assert len(paths) > 200
    assert long_modules_without_a_reason(paths) == [], "split it, or say why at the top"


def test_the_size_check_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    body = "x = 1\n" * (MAX_LINES + 1)
    probe.write_text('"""A probe."""\n' + body)
    assert long_modules_without_a_reason([probe]) == [f"probe.py: {MAX_LINES + 2} lines"]
    probe.write_text('"""A probe: 503 lines because it must.\n"""\n' + body)
    assert long_modules_without_a_reason([probe]) == []


def test_the_size_check_skips_the_vm_builds_root(tmp_path: Path) -> None:
    # Debian's Python in the VM build's root has modules of 2,000 lines without our reason.
    for rel in ("image/vm/harness.py", "image/vm/work/base/usr/lib/python3.11/typing.py",
                "image/vm/work2/base/x.py", "image/vm/workbench/y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    found = [p.relative_to(tmp_path).as_posix() for p in our_modules(tmp_path, ("image",))]
    assert found == ["image/vm/harness.py", "image/vm/workbench/y.py"]
