"""One exception root (docs/architecture.md, "Errors"): every exception class of the project
derives, through the project's own classes, from `TablectlError` (shared/errors.py). Parsed,
not imported, like tests/test_architecture.py: a class is an exception when one of its bases is
a builtin exception or another exception class of the project; a root is one with no base of
the project's."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("controller", "devices", "headoffice", "shared")
BUILTIN_EXCEPTIONS = {
    name for name, obj in vars(builtins).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}


def base_name(node: ast.expr) -> str:
    """`ValueError` -> "ValueError", `contract.SchemaError` -> "SchemaError"."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def classes(paths: list[Path]) -> dict[str, tuple[str, list[str]]]:
    """qualified name -> (simple name, base names) of every class defined in `paths`."""
    out: dict[str, tuple[str, list[str]]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out[f"{where}:{node.name}"] = (node.name, [base_name(b) for b in node.bases])
    return out


def exception_roots(paths: list[Path]) -> list[str]:
    """The project's exception classes none of whose bases is one of the project's."""
    found = classes(paths)
    ours: set[str] = set()  # simple names of the project's exception classes
    changed = True
    while changed:  # a class is one if a base is a builtin exception or one of ours
        changed = False
        for name, bases in found.values():
            if name not in ours and any(b in BUILTIN_EXCEPTIONS or b in ours for b in bases):
                ours.add(name)
                changed = True
    return sorted(q for q, (name, bases) in found.items()
                  if name in ours and not any(b in ours for b in bases))


def project_modules() -> list[Path]:
    return [p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))]


def test_one_exception_root() -> None:
    paths = project_modules()
    assert len(paths) > 200  # the scan reads the tree, not nothing
    assert exception_roots(paths) == ["shared/errors.py:TablectlError"]


def test_the_count_sees_a_second_root(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from shared.errors import TablectlError\n"
                     "class Mine(ValueError):\n    pass\n"
                     "class Under(Mine):\n    pass\n"
                     "class Fine(TablectlError):\n    pass\n")
    roots = exception_roots([*project_modules(), probe])
    assert roots == ["probe.py:Mine", "shared/errors.py:TablectlError"]


def test_the_families_stay_what_callers_catch() -> None:
    # Under the one root, each family is still what callers caught before it had one.
    from controller.journal.errors import EntryRefused, JournalError, RecordDamaged
    from devices.errors import DeviceError, DevicesError
    from shared.config_reader import TomlError
    from shared.errors import InputError, TablectlError

    assert issubclass(DeviceError, InputError)  # docs/architecture.md, "Errors"
    for family in (DevicesError, TomlError, EntryRefused, RecordDamaged):
        assert issubclass(family, TablectlError) and issubclass(family, ValueError), family
    assert issubclass(EntryRefused, JournalError) and issubclass(RecordDamaged, JournalError)


# Builtin exceptions a module may raise itself: the operating system's family (a simulated port
# says what a real one says), and "unreachable".
RAISED_BUILTINS_ALLOWED = {"OSError", "AssertionError", "NotImplementedError", "StopIteration"}
# Where every deliberate error is the project's (issue 30: head office's modules, and devices').
RAISES_CHECKED = ("devices", "headoffice", "shared")


def bare_raises(paths: list[Path]) -> list[str]:
    """`raise ValueError(...)` and the like: a builtin exception raised by the project's code
    instead of one of its families (a bare `raise` re-raising is not one)."""
    out: list[tuple[str, int, str]] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = base_name(exc)
            if name in BUILTIN_EXCEPTIONS and name not in RAISED_BUILTINS_ALLOWED:
                where = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
                out.append((str(where), node.lineno, name))
    return [f"{where}:{line}: {name}" for where, line, name in sorted(out)]


def test_head_office_and_devices_raise_their_own_families() -> None:
    paths = [p for root in RAISES_CHECKED for p in sorted((REPO / root).rglob("*.py"))]
    assert len(paths) > 100
    assert bare_raises(paths) == []


def test_the_raise_check_sees_a_bare_value_error(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f(x):\n    if x:\n        raise ValueError(x)\n    raise KeyError\n"
                     "def g():\n    try:\n        f(1)\n    except ValueError:\n        raise\n"
                     "def h():\n    raise OSError('port hung up')\n")
    assert bare_raises([probe]) == ["probe.py:3: ValueError", "probe.py:4: KeyError"]
