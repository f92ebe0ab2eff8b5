"""The devices' room: `devices/` never imports `controller` (controller wires devices in), and
what devices restate of the games (the 52 faces a card reader names) agrees with the games."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from controller.games.uth.cards import format_card, full_deck
from devices.base import Device
from devices.catalog import event_kinds, implementations, interfaces
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


def device_classes() -> list[type[Device]]:
    """Every concrete Device class defined under devices/."""
    found: list[type[Device]] = []
    for path in sorted(DEVICES.rglob("*.py")):
        name = ".".join(path.relative_to(DEVICES.parent).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        found += [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Device) and obj.__module__ == name
            and not inspect.isabstract(obj)
        ]  # fmt: skip
    return found


def test_every_device_class_is_one_of_the_catalogs_interfaces_with_its_events() -> None:
    classes = device_classes()
    names = {c.__name__ for c in classes}
    assert {"SerialShaker", "SimShaker", "SerialShuffler", "SimShuffler", "AlphaMeter",
            "SimMeter", "GpioSensors", "SimSensors"} <= names  # fmt: skip
    known, impls = interfaces(), implementations()
    for cls in classes:
        names = [n for n, i in known.items() if issubclass(cls, i)]
        assert len(names) == 1, f"{cls.__name__}: not one of the descriptors' interfaces"
        assert cls in impls[names[0]], f"{cls.__name__}: not its descriptor's driver or sim"
        assert set(known[names[0]].EVENTS) <= set(cls.EVENTS), cls.__name__


def test_each_descriptor_declares_every_event_its_implementations_emit() -> None:
    # A descriptor's `events` is what the catalog offers controller: exactly the union of its
    # implementations' EVENTS (and of its wire simulator's driver's), nothing more, nothing less.
    for name, impls in implementations().items():
        emitted = dict.fromkeys(k for cls in impls for k in cls.EVENTS)
        assert set(event_kinds()[name]) == set(emitted), name


def test_the_catalog_keeps_the_event_kinds_in_the_hash_chain() -> None:
    # These strings are inside journals already written: they never change.
    assert event_kinds() == {
        "shaker": ("dice.result", "dice.not_flat", "shaker.fault"),
        "shuffler": ("shuffler.ready", "card.dispensed", "deck.check", "shuffler.jam",
                     "shuffler.fault"),
        "sensors": ("chung.on", "chung.off", "off.pressed", "off.released", "bet.on", "bet.off",
                    "dealer.<action>", "table.open", "table.close"),
        "meter": ("meter.fault", "meter.ready"),
        "cardreader": ("cardreader.read", "cardreader.unreadable", "cardreader.removed",
                       "cardreader.fault"),
    }  # fmt: skip


def test_the_daemon_names_no_device_module() -> None:
    # The daemon drives devices through their interface and commands; what a device does with
    # an effect is the device's (issue 30: effects.py imported the meter's `display_command`).
    from devices.kinds import kinds

    packages = {f"devices.{k.name}" for k in kinds()} | {"devices.sensors"}
    daemon = Path(__file__).resolve().parents[2] / "controller" / "daemon"
    found = {
        path.name: sorted(
            m
            for m in imported_modules(path.read_text())
            if m in packages or m.startswith(tuple(f"{p}." for p in packages))
        )
        for path in sorted(daemon.glob("*.py"))
    }
    assert {p: m for p, m in found.items() if m} == {}
