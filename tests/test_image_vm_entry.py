"""The VM's table entry point (image/vm/overlay/usr/local/lib/tablectl-vm/vm_table.py) runs only
inside `./dev vm-test`'s guest, 30 minutes into a run: its imports and the names it calls on the
daemon's modules are checked here, so a move of the daemon's code breaks this test, not the VM."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENTRY = REPO / "image/vm/overlay/usr/local/lib/tablectl-vm/vm_table.py"


def test_the_vm_entry_point_imports_and_every_name_it_uses_exists() -> None:
    spec = importlib.util.spec_from_file_location("vm_table", ENTRY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its imports resolve
    # `daemon.parse_args`, `build.build_policy`, ...: each attribute of an imported module.
    tree = ast.parse(ENTRY.read_text())
    used = {(n.value.id, n.attr) for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    checked = 0
    for name, attr in sorted(used):
        target = getattr(module, name, None)
        if target is not None and type(target).__name__ == "module":
            assert hasattr(target, attr), f"vm_table.py uses {name}.{attr}, which does not exist"
            checked += 1
    assert checked >= 6, used
    assert callable(module.main)
    importlib.import_module("devices.build").build_hardware  # noqa: B018 - the drivers it builds
