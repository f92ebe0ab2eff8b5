"""docs/asyncapi.yaml is a well-formed AsyncAPI 3 document: its required keys are there, every
$ref points at something that exists, every operation's channel and messages exist, and its
channels are the topics the code uses (shared/link/contract.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML not installed (dev extra)")

DOC = Path(__file__).resolve().parents[1] / "docs" / "asyncapi.yaml"


def load() -> dict[str, Any]:
    doc = yaml.safe_load(DOC.read_text())
    assert isinstance(doc, dict)
    return doc


def resolve(doc: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), f"only local references are used: {ref}"
    node: Any = doc
    for part in ref[2:].split("/"):
        assert isinstance(node, dict) and part in node, f"dangling $ref {ref}"
        node = node[part]
    return node


def refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def test_required_asyncapi_3_keys() -> None:
    doc = load()
    assert str(doc["asyncapi"]).startswith("3.")
    assert doc["info"]["title"] and doc["info"]["version"]
    assert doc["channels"] and doc["operations"]
    for name, op in doc["operations"].items():
        assert op.get("action") in ("send", "receive"), name
        assert "channel" in op, name


def test_every_reference_resolves() -> None:
    doc = load()
    all_refs = refs(doc)
    assert len(all_refs) > 20  # the walk did find them
    for ref in all_refs:
        resolve(doc, ref)


def test_operations_use_their_channels_messages_and_every_channel_is_used() -> None:
    doc = load()
    used = set()
    for name, op in doc["operations"].items():
        channel = resolve(doc, op["channel"]["$ref"])
        used.add(op["channel"]["$ref"])
        assert channel.get("messages"), f"channel of {name} has no messages"
        for msg in op.get("messages", []):
            # An operation's message must be one of its channel's (AsyncAPI 3).
            assert msg["$ref"].startswith(op["channel"]["$ref"] + "/messages/"), name
            resolve(doc, msg["$ref"])
    assert used == {f"#/channels/{c}" for c in doc["channels"]}


def test_channel_addresses_are_the_contract_topics() -> None:
    from shared.link import contract

    doc = load()
    addresses = {c["address"].replace("{table}", "T1").replace("{pool}", "p1")
                 for c in doc["channels"].values()}
    for topic in (contract.outbox_topic("T1"), contract.ack_topic("T1"),
                  contract.award_topic("T1"), contract.pool_topic("p1"),
                  contract.segment_topic("T1"), contract.segment_ack_topic("T1")):
        assert topic in addresses
