"""The import graph against the room table (docs/rooms.toml, rendered into
docs/architecture.md by docs/rooms.py): every import between rooms is a door the table lists,
no circles between rooms, and the page shows the table as it is.

Parsed, not imported: each module's `import` and `from ... import` statements anywhere in the file
(inside functions and `if TYPE_CHECKING:` too), so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("controller", "devices", "headoffice", "shared")


def load_rooms_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_rooms", REPO / "docs" / "rooms.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


rooms_doc = load_rooms_script()
ROOMS = rooms_doc.load()


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
    found = rooms_doc.room_of(module, ROOMS)
    assert found is not None, f"{module} is in no room of docs/rooms.toml"
    return found


def doors(g: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(room, room it imports) -> the imports that make it. A package above the importer is no
    door (Python runs its __init__ anyway; `controller/__init__.py` holds the version)."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m, imps in g.items():
        here = room(m)
        for i in imps:
            there = room(i)
            if there != here and not here.startswith(there + "."):
                out[(here, there)].append(f"{m} -> {i}")
    return out


def doors_not_in_the_table(g: dict[str, set[str]]) -> dict[str, list[str]]:
    return {f"{a} may not import {b}": sorted(how) for (a, b), how in doors(g).items()
            if not ROOMS[a].covers(b)}


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Each circle between rooms once, as the rooms along it (the first repeated at the end)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for a, b in doors(g):
        edges[a].add(b)
    found: set[tuple[str, ...]] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(edges[node]):
            if nxt in path:
                loop = path[path.index(nxt):]
                turn = loop.index(min(loop))  # one spelling of each circle
                found.add(tuple(loop[turn:] + loop[:turn]))
            elif len(path) < 16:
                visit(nxt, [*path, nxt])

    for start in sorted(edges):
        visit(start, [start])
    return [[*c, c[0]] for c in sorted(found)]


def with_probe(rel: str, source: str) -> dict[str, set[str]]:
    """GRAPH with a temporary module at `rel` (never written to the tree) holding `source`."""
    path = REPO / rel
    g = {m: set(i) for m, i in GRAPH.items()}
    g[module_name(path)] = {i for i in imports_of(path, source) if i in GRAPH}
    return g


def test_the_graph_is_read() -> None:
    # The parser sees the arrows it is meant to police (a guard against a vacuous pass).
    assert "controller.daemon.service" in GRAPH
    assert "controller.extensions.base" in GRAPH["controller.link.extension"]
    assert "controller.logs" in GRAPH["controller.daemon.main"]  # `from controller import logs`
    assert "shared.errors" in GRAPH["controller.games.uth.cards"]
    assert len(doors(GRAPH)) > 150


def test_every_module_is_in_a_room_and_every_room_is_there() -> None:
    assert [m for m in GRAPH if rooms_doc.room_of(m, ROOMS) is None] == []
    assert [r for r in ROOMS if not any(m == r or m.startswith(r + ".") for m in GRAPH)] == []
    named = {r for room_ in ROOMS.values() for r in room_.may_import}
    assert sorted(named - set(ROOMS)) == []


def test_every_import_between_rooms_is_a_door_of_the_table() -> None:
    assert doors_not_in_the_table(GRAPH) == {}


def test_every_door_of_the_table_is_used() -> None:
    # The table says what is, not what might be: a door nobody uses is taken out of it.
    used = set(doors(GRAPH))
    unused = {name: [r for r in row.may_import
                     if not any(a == name and (b == r or b.startswith(r + ".")) for a, b in used)]
              for name, row in ROOMS.items()}
    assert {n: r for n, r in unused.items() if r} == {}


def test_no_circle_between_rooms() -> None:
    assert circles(GRAPH) == []


def test_devices_never_import_controller_nor_head_office() -> None:
    for name, row in ROOMS.items():
        if name.split(".")[0] == "devices":
            assert not any(r.split(".")[0] in ("controller", "headoffice")
                           for r in row.may_import), name
    assert not [(a, b) for a, b in doors(GRAPH)
                if a.split(".")[0] == "devices" and b.split(".")[0] not in ("devices", "shared")]


SHARED = ("shared", "shared.errors", "shared.money", "shared.clock", "shared.stopping",
          "shared.config_reader", "shared.link", "shared.link.outbox")


def test_shared_imports_nothing_of_the_table_its_devices_nor_head_office() -> None:
    """shared/ is what both programs speak (the contract, the transport, errors, money, the
    clock, the TOML reader), owned by neither: its rows name only shared rooms, and no import
    leaves it."""
    rows = {n: r for n, r in ROOMS.items() if n.split(".")[0] == "shared"}
    assert set(rows) == set(SHARED)
    assert {n: r.may_import for n, r in rows.items()
            if any(x.split(".")[0] != "shared" for x in r.may_import)} == {}
    assert [(a, b) for a, b in doors(GRAPH)
            if a.split(".")[0] == "shared" and b.split(".")[0] != "shared"] == []


def test_both_programs_speak_through_shared() -> None:
    # The table's link and head office's worker use the one contract and transport; head
    # office imports nothing of the table's link room (controller/link/ is the table's side).
    for side in ("controller.link", "headoffice.worker"):
        assert {"shared.link.contract", "shared.link.transport"} <= {
            i for m, imps in GRAPH.items() if room(m) == side for i in imps}, side
    assert not [n for n, row in ROOMS.items()
                if n.split(".")[0] == "headoffice" and row.covers("controller.link")]


def reach(start: set[str]) -> set[str]:
    """The rooms `start`'s rooms may import, and theirs, to the end (the table's doors)."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [r for r in ROOMS if r not in seen and ROOMS[name].covers(r)]
    return seen


def test_head_office_takes_of_the_table_only_its_pure_rules_and_meters() -> None:
    """What head office still takes of controller: the approved rules it checks a jackpot hit
    with (`controller/games`: paytables, evaluator, jackpot) and the accounting meters it sums
    (`controller/meters.py`), the same code the table runs, declared in docs/rooms.toml; and
    through them nothing of the table's daemon, journal, link or round machines."""
    into_controller = {b for a, b in doors(GRAPH)
                       if a.split(".")[0] == "headoffice" and b.split(".")[0] == "controller"}
    assert into_controller == {"controller.games", "controller.meters"}
    pulled = reach(into_controller)
    assert {r for r in pulled if r.split(".")[0] == "controller"} == {
        "controller.games", "controller.meters", "controller.events"}
    assert all(r.split(".")[0] in ("controller", "shared") for r in pulled)


def test_the_journal_imports_only_events_errors_and_logs() -> None:
    # Not the round machines (Event/Effect/Now are controller.events'), not the configuration
    # (its JournalConfig is controller/journal/config.py).
    assert ROOMS["controller.journal"].may_import == (
        "controller.events", "shared.errors", "controller.logs")
    assert {b for a, b in doors(GRAPH) if a == "controller.journal"} <= {
        "controller.events", "shared.errors", "controller.logs"}


def test_only_the_daemon_imports_the_daemon() -> None:
    """Extensions, the CLI, the link, head office: none may reach into controller.daemon (the
    extensions see the table through extensions.base.Table)."""
    assert [n for n, row in ROOMS.items()
            if n != "controller.daemon" and row.covers("controller.daemon")] == []


def test_the_pure_rooms_import_only_what_is_pure() -> None:
    assert ROOMS["controller.games"].may_import == ("shared.errors",)
    # shared.money: the one formatter of cents (pure), for the Loss Limit's refusals.
    assert set(ROOMS["controller.rounds"].may_import) == {
        "controller.games", "controller.events", "shared.errors", "shared.money"}
    for bottom in ("controller.codes", "controller.errorlog", "controller.meters",
                   "controller.logs", "controller.events"):
        # The registries (controller/events.py) are at the bottom too: they import nothing.
        assert all(r == "controller.events" or r.split(".")[0] == "shared"
                   for r in ROOMS[bottom].may_import), bottom
    # The outbox types are the contract's (shared/link/outbox.py), named by the registries.
    assert ROOMS["controller.events"].may_import == ("shared.link.outbox",)


@pytest.mark.parametrize(
    ("rel", "source", "door"),
    [
        ("controller/journal/probe.py", "from controller.rounds.base import Event\n",
         "controller.journal may not import controller.rounds"),
        ("controller/journal/probe.py", "def f():\n    from ..config import load\n",
         "controller.journal may not import controller.config"),
        ("devices/base_probe.py", "from controller.codes import Code\n",
         "devices may not import controller.codes"),
        ("devices/meter/probe.py", "if True:\n    import controller.events\n",
         "devices.meter may not import controller.events"),
        ("controller/extensions/probe.py", "from controller.daemon.service import TableService\n",
         "controller.extensions may not import controller.daemon"),
        ("headoffice/pools_probe.py", "from controller.rounds import uth\n",
         "headoffice may not import controller.rounds"),
        ("headoffice/worker_probe.py", "from controller.link.relay import OutboxRelay\n",
         "headoffice may not import controller.link"),
        ("shared/link/probe.py", "from controller.link.relay import OutboxRelay\n",
         "shared.link may not import controller.link"),
        ("shared/money_probe.py", "def f():\n    from headoffice.db import open_database\n",
         "shared may not import headoffice.db"),
        ("shared/clock_probe.py", "from devices.base import Device\n",
         "shared may not import devices.base"),
    ],
)
def test_a_wrong_import_fails_the_check(rel: str, source: str, door: str) -> None:
    # A temporary module with one import the table does not allow, lazily or relatively too.
    assert list(doors_not_in_the_table(with_probe(rel, source))) == [door]


def test_a_circle_fails_the_check() -> None:
    # headoffice/db.py importing segments again (segments -> ledger -> db): the circle the
    # segments table's columns moving into db.py broke.
    g = with_probe("headoffice/db.py", "from headoffice.segments import apply_segments\n")
    assert ["headoffice.db", "headoffice.segments", "headoffice.ledger", "headoffice.db"] in [
        c[c.index("headoffice.db"):] + c[1:c.index("headoffice.db") + 1]
        for c in circles(g) if "headoffice.db" in c]


def test_the_page_shows_the_table() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "<!-- rooms: begin -->" in page
    assert rooms_doc.page_with_table(page, ROOMS) == page, (
        "regenerate: .venv/bin/python docs/rooms.py")


# -- no circles between files (issue 30) ---------------------------------------------------
# The rooms above may hide a circle inside a room (the room test sees rooms, not files). Here
# every module of FILE_ROOTS is a node, and an arrow is an import that runs when the module is
# imported: top-level statements, including those under `if`/`try`/`with` and in class bodies,
# but not `if TYPE_CHECKING:` blocks (never run) nor imports inside functions (they run at call
# time, when every module is loaded, so they cannot fail on a half-made module: they are how a
# circle is deliberately broken). Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first:
# arrows to them too, except to the importer's own packages (already running). `from p import
# name` is an arrow to the module `p.name` when there is one, else to `p` itself (a name its
# `__init__` must have defined: a circle through one's own package counts).
FILE_ROOTS = (*ROOTS, "demo")
# Circles closed only by imports inside functions: none (issue 30; the last four went when
# what both sides used moved into a module of its own: cli/attention.py's `state_text`,
# cli/uth_args.py, games/uth/tables_compute.py, the card payloads' check in link/contract.py).
# It may not grow: a new one fails the test below; break it the same way, not by adding it.
LAZY_CIRCLES: frozenset[tuple[str, ...]] = frozenset()


def _packages_above(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


IMPORT, CALL, NEVER = 0, 1, 2  # when a statement runs: at import, when called, never


def _statements(body: list[ast.stmt], when: int) -> list[tuple[ast.stmt, int]]:
    """Every statement of `body`, with when it runs: at import, only when a function is
    called, or never (under `if TYPE_CHECKING:`)."""
    out: list[tuple[ast.stmt, int]] = []
    for node in body:
        out.append((node, when))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out += _statements(node.body, max(when, CALL))
        elif isinstance(node, ast.If):
            test = node.test
            typing_only = (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            out += _statements(node.body, NEVER if typing_only else when)
            out += _statements(node.orelse, when)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse,
                          node.finalbody):
                out += _statements(block, when)
        elif isinstance(node, ast.With | ast.AsyncWith | ast.ClassDef | ast.For | ast.While):
            out += _statements(node.body, when)
    return out


@functools.cache
def _import_statements(source: str) -> tuple[tuple[ast.stmt, int], ...]:
    """The import statements of a module's source, with when each runs. Cached by the text:
    the circle tests build a graph of every module several times, each probe changing one
    module, and parsing the whole tree again each time was most of their cost."""
    return tuple((node, when) for node, when in _statements(ast.parse(source).body, IMPORT)
                 if isinstance(node, ast.Import | ast.ImportFrom))


def file_graph(paths: dict[str, str], *, deferred: bool = False) -> dict[str, set[str]]:
    """module -> the modules importing it runs (`deferred`: imports in functions too; never
    those under `if TYPE_CHECKING:`), from module name -> source."""
    known = set(paths)
    graph: dict[str, set[str]] = {}
    for name, source in paths.items():
        here = name.split(".")
        is_package = source.startswith("#package\n")
        package = here if is_package else here[:-1]
        own = set(_packages_above(name))
        arrows: set[str] = set()
        for node, when in _import_statements(source):
            if when == NEVER or (when == CALL and not deferred):
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (".".join([*package[: len(package) - node.level + 1],
                                  *([node.module] if node.module else [])])
                        if node.level else node.module or "")
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:
                        targets.append(sub)
                    else:
                        targets.append(base)
                        if base in own:  # a name from one's own package's __init__
                            arrows.add(base)
            for target in targets:
                arrows.update(t for t in [target, *_packages_above(target)]
                              if t in known and t not in own)
        graph[name] = arrows - {name}
    return graph


def file_circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The modules of each circle (a strongly connected set of two or more), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(tuple(sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def sources(roots: tuple[str, ...] = FILE_ROOTS) -> dict[str, str]:
    """module name -> source ("#package\n" marks a package's __init__)."""
    out: dict[str, str] = {}
    for root in roots:
        for path in sorted((REPO / root).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            out[module_name(path)] = ("#package\n" + text) if path.name == "__init__.py" else text
    return out


SOURCES = sources()


def in_a_circle(modules: tuple[str, ...], found: list[tuple[str, ...]]) -> bool:
    return any(set(modules) <= set(circle) for circle in found)


def test_no_circle_between_files_at_import() -> None:
    graph = file_graph(SOURCES)
    assert len(graph) > 250 and "demo.linked" in graph  # the walk read the tree, demo/ too
    assert "devices.kind" in graph["devices.config"]
    assert file_circles(graph) == []


def test_no_new_circle_through_imports_inside_functions() -> None:
    assert set(file_circles(file_graph(SOURCES, deferred=True))) <= LAZY_CIRCLES


@pytest.mark.parametrize(
    ("module", "added", "circle"),
    [
        # at the top: devices.kinds imports devices.errors
        ("devices.errors", "from devices.kinds import kinds\n",
         ("devices.errors", "devices.kinds")),
        # under `try:` and in a class body: still run at import
        ("devices.errors", "try:\n    import devices.kinds\nexcept ImportError:\n    pass\n",
         ("devices.errors", "devices.kinds")),
        ("devices.errors", "class X:\n    from devices import kinds\n",
         ("devices.errors", "devices.kinds")),
        # a name from one's own package's __init__, which imports the module
        ("devices.meter.interface", "from devices.meter import DEVICE\n",
         ("devices.meter", "devices.meter.interface")),
    ],
)
def test_a_circle_between_files_fails_the_check(module: str, added: str,
                                                 circle: tuple[str, ...]) -> None:
    probe = dict(SOURCES)
    probe[module] += "\n" + added
    assert in_a_circle(circle, file_circles(file_graph(probe)))


@pytest.mark.parametrize("added", [
    "def f():\n    from devices.kinds import kinds\n",  # in a function: at call time
    "class X:\n    def f(self):\n        import devices.kinds\n",  # in a method
])
def test_an_import_in_a_function_is_no_circle_at_import_but_a_lazy_one(added: str) -> None:
    probe = dict(SOURCES)
    probe["devices.errors"] += "\n" + added
    assert file_circles(file_graph(probe)) == []
    deferred = file_circles(file_graph(probe, deferred=True))
    assert in_a_circle(("devices.errors", "devices.kinds"), deferred)
    assert not set(deferred) <= LAZY_CIRCLES  # a new lazy circle fails the second test


def test_an_import_for_the_type_checker_is_no_circle() -> None:
    probe = dict(SOURCES)
    probe["devices.errors"] += ("\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                "    from devices.kinds import kinds\n")
    assert file_circles(file_graph(probe)) == file_circles(file_graph(SOURCES)) == []
    assert file_circles(file_graph(probe, deferred=True)) == file_circles(
        file_graph(SOURCES, deferred=True))


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
