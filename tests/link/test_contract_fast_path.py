"""contract._obj's shortcuts (issue 17) refuse and accept exactly what the full checks do.

The reference is the parser before the shortcuts: every integer through `_bounded_int`, every
document walked by `_check_shape`. Documents are built near the bounds (18/19-digit integers,
strings around MAX_STRING, nesting around MAX_DEPTH, digits inside strings), so a shortcut
that skipped a check it needs would accept what the reference refuses.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared.link import contract


def reference(raw: bytes) -> Any:
    """The pre-shortcut parser: its result, or the SchemaError's text."""
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, parse_int=contract._bounded_int,
                          parse_constant=contract._no_constant)
        contract._check_shape(data, "x")
    except contract.SchemaError as exc:
        return ("refused", str(exc).removeprefix("x: "))
    except (ValueError, RecursionError):
        return ("refused", "not JSON")
    return data


def fast(raw: bytes) -> Any:
    try:
        return contract._obj(raw, "x", limit=10**7)
    except contract.SchemaError as exc:
        text = str(exc).removeprefix("x: ")
        return ("refused", "not JSON" if text.startswith("not JSON") else text)


ints = st.one_of(st.integers(-10**18 + 1, 10**18 - 1),
                 st.integers(10**18, 10**25), st.integers(-10**25, -10**18))
strings = st.one_of(st.text(max_size=20),
                    st.integers(contract.MAX_STRING - 3, contract.MAX_STRING + 3).map(
                        lambda n: "a" * n),
                    st.integers(17, 21).map(lambda n: "9" * n))
leaves = st.one_of(ints, strings, st.booleans(), st.none())


def nest(depth: int, leaf: Any) -> Any:
    for i in range(depth):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


docs = st.recursive(leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=5), kids, max_size=4)),
    max_leaves=12)
deep = st.builds(nest, st.integers(contract.MAX_DEPTH - 3, contract.MAX_DEPTH + 2), leaves)


@settings(max_examples=400, deadline=None)
@given(st.one_of(docs, deep))
def test_shortcuts_decide_as_the_full_checks(doc: Any) -> None:
    body = {"v": contract.VERSION, "doc": doc}
    raw = json.dumps(body).encode()
    want = reference(raw)
    got = fast(raw)
    if isinstance(want, dict):
        assert got == want
    else:
        assert got == want, raw[:200]


def test_an_increment_takes_the_short_way_and_a_long_integer_the_checked_one() -> None:
    ok = contract.dumps(contract.outbox_message("T1", 5, 5, "jackpot_increment", "u", {"w": 1}))
    assert contract._LONG_DIGITS not in ok.translate(contract._NINES)
    assert contract.parse_outbox(ok, "T1")["seq"] == 5
    # 19 digits in a number is refused; 19 digits inside a string are only a string.
    too_long = ok.replace(b'"seq":5', b'"seq":1234567890123456789')
    assert fast(too_long) == ("refused", "an integer of 19 digits (at most 18)")
    in_string = ok.replace(b'"utc":"u"', b'"utc":"1234567890123456789"')
    assert fast(in_string)["utc"] == "1234567890123456789"
