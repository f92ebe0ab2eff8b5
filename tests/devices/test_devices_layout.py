"""The devices' room: `devices/` never imports `controller` (controller wires devices in), and
what devices restate of the games (the 52 faces a card reader names) agrees with the games."""

from __future__ import annotations

import ast
from pathlib import Path

from controller.games.uth.cards import format_card, full_deck
from devices.shuffler import STANDARD_DECK

DEVICES = Path(__file__).resolve().parents[2] / "devices"


def imported_modules(source: str) -> set[str]:
    """Every module an import statement names, at any depth (function-level imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "devices/ uses absolute imports only"
            names.add(node.module or "")
    return names


def test_no_module_under_devices_imports_controller() -> None:
    modules = sorted(DEVICES.rglob("*.py"))
    assert len(modules) > 20  # the walk found the package, not an empty directory
    offenders = {
        str(path.relative_to(DEVICES.parent)): sorted(
            m for m in imported_modules(path.read_text()) if m.split(".")[0] == "controller"
        )
        for path in modules
    }
    assert {p: m for p, m in offenders.items() if m} == {}


def test_the_import_scan_sees_nested_and_from_imports() -> None:
    source = "import os\ndef f():\n    from controller.games import x\n    import controller.a\n"
    assert imported_modules(source) == {"os", "controller.games", "controller.a"}


def test_the_card_reader_names_the_games_52_cards_in_deck_order() -> None:
    assert tuple(format_card(c) for c in full_deck()) == STANDARD_DECK
