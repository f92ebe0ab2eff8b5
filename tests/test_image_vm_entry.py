"""The VM's table entry point (image/vm/overlay/usr/local/lib/tablectl-vm/vm_table.py) runs only
inside `./dev vm-test`'s guest, 30 minutes into a run: its imports and the names it calls on the
daemon's modules are checked here, so a move of the daemon's code breaks this test, not the VM.
Its imports are inside `main()` (after the lean start's OpenSSL refusal, as tablectld's entry
point does it), so they are read from the source and resolved here."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENTRY = REPO / "image/vm/overlay/usr/local/lib/tablectl-vm/vm_table.py"


def imported_names(tree: ast.AST) -> dict[str, Any]:
    """Every name a `from X import Y [as Z]` anywhere in the file binds, resolved."""
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            module = importlib.import_module(node.module)
            for alias in node.names:
                try:
                    value = getattr(module, alias.name)
                except AttributeError:  # a submodule: `from controller.daemon import build`
                    value = importlib.import_module(f"{node.module}.{alias.name}")
                names[alias.asname or alias.name] = value
    return names


def test_the_vm_entry_point_imports_and_every_name_it_uses_exists() -> None:
    spec = importlib.util.spec_from_file_location("vm_table", ENTRY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main)
    tree = ast.parse(ENTRY.read_text())
    names = imported_names(tree)  # its imports resolve
    for wanted in ("build_hardware", "build_machine", "TableService", "refuse_openssl"):
        assert callable(names.get(wanted)), f"vm_table.py no longer imports {wanted}"
    # `daemon.parse_args`, `build.build_policy`, ...: each attribute of an imported module.
    used = {(n.value.id, n.attr) for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    checked = 0
    for name, attr in sorted(used):
        target = names.get(name)
        if target is not None and type(target).__name__ == "module":
            assert hasattr(target, attr), f"vm_table.py uses {name}.{attr}, which does not exist"
            checked += 1
    assert checked >= 6, used


def test_the_vm_entry_point_refuses_openssl_before_importing_the_daemon() -> None:
    """The lean start (controller/daemon/entry.py) works only before anything imports ssl:
    main()'s first statement is the refusal, and nothing at module level imports the daemon."""
    tree = ast.parse(ENTRY.read_text())
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom | ast.Import)]
    modules = {n.module for n in top if isinstance(n, ast.ImportFrom)} | {
        a.name for n in top if isinstance(n, ast.Import) for a in n.names}
    assert modules <= {"__future__", "os", "random", "sys", "controller.daemon.entry"}, modules
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    first = main.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
    assert ast.unparse(first.value) == "refuse_openssl(sys.argv[1:])"
