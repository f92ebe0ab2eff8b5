"""Kinds live in their registries (controller/events.py: `Kind`, `EffectKind`, `OutboxType`);
code names a kind by its member, never by repeating its text (issue 30 item 3).

Parsed, not imported, like tests/test_architecture.py. Flagged in controller/ and headoffice/
(controller/events.py, the registries, excepted):
- any string equal to an event kind or an outbox message type (their texts are dotted or
  specific: wherever one appears it is used as that kind);
- an effect kind ("display", "round", "log", ... are common words) where it is used as one: the
  kind of an `Effect(...)`, compared with a `.kind` or `kind`, or the value of a `"kind"` key.
  Head office is not checked for effect kinds: its `kind` is an MQTT message's (birth, status,
  outbox), not an effect's.
devices/ keeps its own event kinds (it never imports controller); tests/rounds/
test_rounds_contract.py checks each device's EVENTS against `Kind`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.events import REGISTRY, EffectKind, Kind, OutboxType

REPO = Path(__file__).resolve().parents[1]
REGISTRIES = REPO / "controller" / "events.py"
EVENT_KINDS = {k.value: f"Kind.{k.name}" for k in Kind}
OUTBOX_TYPES = {t.value: f"OutboxType.{t.name}" for t in OutboxType}
EFFECT_KINDS = {k.value: f"EffectKind.{k.name}" for k in EffectKind}


def _strings(node: ast.AST) -> list[ast.Constant]:
    """`node` itself if it is a string constant, or the strings of a literal tuple/list/set."""
    items = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [n for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _is_kind(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "kind") or (
        isinstance(node, ast.Name) and node.id == "kind")


def _effect_kind_uses(tree: ast.AST) -> list[ast.Constant]:
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "Effect":
                found += _strings(node.args[0]) if node.args else []
                found += [c for k in node.keywords if k.arg == "kind" for c in _strings(k.value)]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_is_kind(o) for o in operands):
                found += [c for o in operands for c in _strings(o)]
        elif isinstance(node, ast.Set):
            strings = _strings(node)
            if len(strings) == len(node.elts) and all(c.value in EFFECT_KINDS for c in strings):
                found += strings  # a set of effect kinds: {"outbox", "round"}
        elif isinstance(node, ast.Dict):
            found += [c for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant) and k.value == "kind" for c in _strings(v)]
    return [c for c in found if c.value in EFFECT_KINDS]


def kind_literals(path: Path, text: str | None = None) -> list[str]:
    """`path:line: "text" (use Registry.MEMBER)` for each kind literal in the file (or `text`)."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, filename=str(path))
    where = path.relative_to(REPO)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            member = EVENT_KINDS.get(node.value) or OUTBOX_TYPES.get(node.value)
            if member:
                out.append(f"{where}:{node.lineno}: {node.value!r} (use {member})")
    if where.parts[0] == "controller":
        out += [f"{where}:{c.lineno}: {c.value!r} (use {EFFECT_KINDS[c.value]})"
                for c in _effect_kind_uses(tree)]
    return sorted(set(out))


def test_the_registries_are_what_the_checker_reads() -> None:
    # A guard against a vacuous pass: the three registries are there and the events registry
    # spells every `Kind` (tests/rounds/test_rounds_contract.py checks it byte for byte).
    assert set(EVENT_KINDS) == set(REGISTRY) and "dice.result" in EVENT_KINDS
    assert "round_result" in OUTBOX_TYPES and "display" in EFFECT_KINDS


def test_no_kind_literal_outside_its_registry() -> None:
    found = []
    for root in ("controller", "headoffice"):
        for path in sorted((REPO / root).rglob("*.py")):
            if path != REGISTRIES:
                found += kind_literals(path)
    assert found == [], "name the kind by its registry member:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("root", "source"),
    [
        ("controller", 'emit(Event("link.up", {}))\n'),
        ("controller", 'LOSS = "journal.loss_accepted"\n'),
        ("controller", 'def f(s):\n    return "table.open" if s else "dealer"\n'),
        ("controller", 'fx = {"type": "round_result", "payload": {}}\n'),
        ("controller", 'e = Effect("display", {"mode": "closed"})\n'),
        ("controller", 'e = Effect(kind="log", data={})\n'),
        ("controller", 'ok = fx.kind in ("outbox", "round")\n'),
        ("controller", 'ok = kind != "alarm"\n'),
        ("controller", 'shown = {"kind": "device", "data": {}}\n'),
        ("controller", 'MONEY = frozenset({"outbox", "round"})\n'),
        ("headoffice", 'if type_ == "jackpot_hit":\n    pass\n'),
    ],
)
def test_a_kind_literal_would_be_seen(root: str, source: str) -> None:
    path = REPO / root / "example.py"
    assert kind_literals(path, source), source


@pytest.mark.parametrize(
    ("root", "source"),
    [
        # Common words that are effect kinds, not used as one.
        ("controller", 'summary = {"round": 3, "log": []}\n'),
        ("controller", 'device = data.get("device", "meter")\n'),
        # Head office's `kind` is an MQTT message's (outbox, birth, status).
        ("headoffice", 'if item.kind == "outbox":\n    pass\n'),
        # A member, not its text.
        ("controller", 'e = Effect(EffectKind.DISPLAY, {}); k = Kind.LINK_UP\n'),
    ],
)
def test_a_word_that_is_not_used_as_a_kind_is_not_flagged(root: str, source: str) -> None:
    assert kind_literals(REPO / root / "example.py", source) == []
