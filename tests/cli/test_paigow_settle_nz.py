"""`tablectl paigow settle` gives the money the round machine gives for the same round, with NZ
7.2 (a player controlling several boxes keeps one; the dealer sets the others the house way;
seed 002) and NZ 12.17 (a miscount that leaves the bank short: the player/banker makes up the
difference, a co-banker equally with the house). Each round is played on the machine, then the
same inputs go to the command (its JSON output), and the two are compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.cli.main import main
from tests.rounds.test_rounds_paigow_procedures import (
    BANK,
    BOX3,
    BOX5,
    LOSE_BANK,
    WIN,
    nz_bank,
    other_setting,
    roamer_on_two_boxes,
)
from tests.support.paigow_table import Table, first

REPO = Path(__file__).resolve().parents[2]


def document(t: Table, hands: dict[str, Any], bank_hand: Any) -> dict[str, Any]:
    """The round the machine holds, as `paigow settle` reads it (docs/paigow.md)."""
    m, st = t.m.config.money, t.state
    return {
        "table": {"minimum": m.minimum, "maximum": m.maximum, "chip_unit": m.chip_unit,
                  "commission_bp": m.commission_bp, "house_liability": m.house_liability,
                  "cobank_box_maximum": m.cobank_box_maximum, "unpayable_up": m.unpayable_up,
                  "boxes": t.m.config.boxes, "multiples_notice": t.m.config.multiples_notice},
        "bank": {"holder": st.bank["holder"], "box": st.bank["box"],
                 "wager": (st.banker or {}).get("funds") or 0, "hand": bank_hand},
        "hands": hands,
        "wagers": [dict(w) for w in st.wagers],
        "controls": dict(st.controls),
        "miscounted": bool(st.miscounts),
    }


def settle(doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    code = main(["paigow", "settle", "--rules", "nz", str(path), "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def money(results: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("box", "player", "amount", "outcome", "won", "commission", "net", "paid_back")
    return [tuple(r[k] for k in keys) for r in results]


def same_money(summary: dict[str, Any], tool: dict[str, Any]) -> None:
    s = summary["settlement"]
    assert money(tool["results"]) == money(s["results"])
    assert (tool["banker"]["gross"], tool["banker"]["commission"], tool["banker"]["net"]) == (
        s["banker_gross"], s["banker_commission"], s["banker_net"])
    assert tool["house_net"] == s["house_net"] and tool["players_net"] == s["players_net"]
    assert tool["conserved"] and s["conserved"]
    assert tool.get("make_up") == summary.get("make_up")
    assert tool.get("house_way_boxes") == summary.get("house_way_boxes")


@pytest.mark.parametrize(("holder", "funds"), [("player", 2000), ("co-bank", 1000)])
def test_nz_12_17_a_short_bank_is_made_up_as_at_the_table(
    holder: str, funds: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = nz_bank(holder, funds)
    t.send("dealer.miscount", box=2, player="p2", amount=6000)
    t.send("dealer.delivered")
    doc = document(t, WIN, LOSE_BANK)
    summary = first(t.send("dealer.result", hands=WIN, bank_hand=LOSE_BANK), "round")["summary"]
    code, tool = settle(doc, tmp_path, capsys)
    assert code == 0, tool
    assert tool["make_up"]["rule"] == "NZ 12.17" and tool["make_up"]["shortfall"] == 4000
    same_money(summary, tool)
    # Without the miscount the same short bank is refused: the wagers as keyed must be covered.
    code, err = settle({**doc, "miscounted": False}, tmp_path, capsys)
    assert code == 2 and "tablectl" in err


def test_nz_12_17_a_bank_that_still_covers_makes_up_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = nz_bank("player", 10_000)
    t.send("dealer.miscount", box=2, player="p2", amount=4000)
    t.send("dealer.delivered")
    doc = document(t, WIN, LOSE_BANK)
    summary = first(t.send("dealer.result", hands=WIN, bank_hand=LOSE_BANK), "round")["summary"]
    code, tool = settle(doc, tmp_path, capsys)
    assert code == 0 and "make_up" not in tool
    same_money(summary, tool)


def test_nz_7_2_the_box_a_player_does_not_keep_is_set_the_house_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = roamer_on_two_boxes(player="roamer", box=5)
    own = {"3": other_setting(BOX3), "5": other_setting(BOX5)}
    code, err = settle(document(t, own, BANK), tmp_path, capsys)
    assert code == 2 and "NZ 7.2" in err and "box 3" in err  # as the machine refuses it
    hands = {"3": {"tiles": BOX3}, "5": other_setting(BOX5)}
    doc = document(t, hands, BANK)
    summary = first(t.send("dealer.result", hands=hands, bank_hand=BANK), "round")["summary"]
    code, tool = settle(doc, tmp_path, capsys)
    assert code == 0 and tool["house_way_boxes"] == {"3": "roamer"}
    same_money(summary, tool)


def test_nz_7_2_without_a_choice_the_first_box_wagered_on_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = roamer_on_two_boxes()
    hands = {"3": other_setting(BOX3), "5": {"tiles": BOX5}}
    doc = document(t, hands, BANK)
    summary = first(t.send("dealer.result", hands=hands, bank_hand=BANK), "round")["summary"]
    code, tool = settle(doc, tmp_path, capsys)
    assert code == 0 and tool["house_way_boxes"] == {"5": "roamer"}
    same_money(summary, tool)


@pytest.mark.parametrize("profile", ["nsw", "act"])
def test_a_miscount_is_nz_only_unless_the_table_opts_in(
    profile: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads((REPO / "docs/examples/paigow-round.json").read_text())
    path = tmp_path / "round.json"
    path.write_text(json.dumps({**doc, "miscounted": True}))
    code = main(["paigow", "settle", "--rules", profile, str(path), "--json"])
    assert code == 2 and "NZ 12.17" in capsys.readouterr().err
