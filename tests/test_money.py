"""One money formatter (issue 30): shared/money.py (the table's and head office's), head
office's console (its pages' `dollars` filter and its figures) and the meter's driver
(devices.meter.format_cents) write every amount the same way, the sign before the dollar
sign, and the text reads back as the same cents; the console keeps no formatter of its own."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from devices.meter import format_cents
from headoffice.console import app as console_app
from headoffice.console import money as console_money
from headoffice.console import views as console_views
from shared.money import dollars, dollars_or_dash, parse_cents

CENTS = st.integers(min_value=-(10**14), max_value=10**14)


@given(CENTS)
def test_the_table_head_office_and_the_meter_write_the_same_text(cents: int) -> None:
    text = dollars(cents)
    assert format_cents(cents) == text
    assert dollars_or_dash(cents) == text
    # "-$1,234.50": the sign first, then the dollars; and the text is the same cents again.
    assert text.startswith("-$" if cents < 0 else "$")
    assert parse_cents(text.removeprefix("-")) == abs(cents)


def test_a_negative_amount_has_its_sign_before_the_dollar_sign() -> None:
    assert [format_cents(c) for c in (-250, -1, -100, -123456)] == [
        "-$2.50", "-$0.01", "-$1.00", "-$1,234.56"]
    assert dollars(-250) == dollars_or_dash(-250) == "-$2.50"


def test_the_console_formats_amounts_with_the_shared_formatter_only() -> None:
    # Its pages, its messages and its parameter tables call shared.money; its money module
    # parses what an operator types and formats rates, and has no amount formatter of its own.
    assert console_app.dollars_or_dash is console_views.dollars_or_dash is dollars_or_dash
    assert console_money.dollars_or_dash is dollars_or_dash
    assert not hasattr(console_money, "dollars")
    assert console_money.param_changes({"seed": 100}, {"seed": -250}) == [
        ("seed", "$1.00", "-$2.50")]
