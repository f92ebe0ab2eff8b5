"""`tablectl paigow ...` and `tablectl math paigow`: output shapes, batch mode, exit codes."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from controller.cli.main import main
from controller.games.paigow.houseway import house_way
from controller.games.paigow.profiles import Profile
from controller.games.paigow.tiles import parse_tiles

EXAMPLE = Path(__file__).parents[2] / "docs" / "examples" / "paigow-round.json"


def run(argv: list[str], capsys, stdin: str = "") -> tuple[int, str, str]:
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors
        code = int(exc.code or 0)
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("profile", ["nsw", "nz", "act"])
def test_houseway_json_matches_the_engine(profile: str, capsys) -> None:
    # The computer that checks the setting of the House way (NSW 5.1).
    tiles = ["6-6", "4-5", "3-3", "1-2"]
    code, out, _ = run(["paigow", "houseway", "--rules", profile, *tiles, "--json"], capsys)
    assert code == 0
    expected = house_way(parse_tiles(tiles), Profile(profile)).as_json()
    assert json.loads(out) == expected
    assert set(expected) == {"high", "low"}


def test_houseway_batch_keeps_order_and_marks_bad_lines(capsys) -> None:
    lines = "6-6 4-5 3-3 1-2\n1-1 1-1 6-6 6-6\n6-6 6-6 6-6 1-1\nteen day high-8 gee-joon-3\n"
    code, out, _ = run(["paigow", "houseway", "--rules", "nz", "--batch"], capsys, lines)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert len(rows) == 4
    assert rows[0] == house_way(parse_tiles(["6-6", "4-5", "3-3", "1-2"]), Profile.NZ).as_json()
    assert rows[2]["line"] == 3 and "6-6 appears 3 times" in rows[2]["error"]
    assert rows[3] == house_way(parse_tiles(["6-6", "1-1", "4-4", "1-2"]), Profile.NZ).as_json()


def test_compare_from_the_players_side(capsys) -> None:
    code, out, _ = run(
        [
            "paigow",
            "compare",
            "--rules",
            "nsw",
            "--player",
            "6-6 6-6 / 4-4 4-4",
            "--banker",
            "1-1 1-1 / 5-5 5-5",
            "--json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(out) == {"result": "win"}


def test_compare_batch(capsys) -> None:
    good = {
        "player": {"high": ["1-1", "1-1"], "low": ["5-5", "5-5"]},
        "banker": {"high": ["6-6", "6-6"], "low": ["4-4", "4-4"]},
    }
    bad = {"player": {"high": ["1-1"], "low": ["5-5", "5-5"]}, "banker": good["banker"]}
    stdin = "\n".join([json.dumps(good), "not json", json.dumps(bad)]) + "\n"
    code, out, _ = run(["paigow", "compare", "--rules", "act", "--batch"], capsys, stdin)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert rows[0] == {"result": "lose"}
    assert "not valid JSON" in rows[1]["error"]
    assert "expected 2 tiles" in rows[2]["error"]


@pytest.mark.parametrize(
    "argv",
    [
        ["paigow", "houseway", "--rules", "xx", "6-6", "4-5", "3-3", "1-2"],
        ["paigow", "houseway", "--rules", "nsw", "6-6", "4-5", "3-3"],
        ["paigow", "houseway", "--rules", "nsw", "6-6", "4-5", "3-3", "7-7"],
        ["paigow", "compare", "--rules", "nsw", "--player", "6-6 6-6 4-4 4-4", "--banker", "x"],
        ["math", "paigow", "--rules", "nsw", "--commission", "0.07"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv: list[str], capsys) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "error" in err


def test_settle_example_round_conserves_money(capsys) -> None:
    code, out, _ = run(["paigow", "settle", "--rules", "nsw", str(EXAMPLE), "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["conserved"] is True
    assert doc["players_net"] + doc["banker"]["net"] + doc["house_net"] == 0
    conceded = [r for r in doc["results"] if r["conceded"]]
    assert conceded and all(r["outcome"] == "lose" for r in conceded)
    # Two wagers on box 2 share its tiles and so its outcome.
    box2 = {r["outcome"] for r in doc["results"] if r["box"] == 2}
    assert len(box2) == 1


def test_settle_refuses_tiles_the_set_cannot_hold(capsys, tmp_path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    doc["hands"]["2"] = "6-6 4-5 / 5-5 2-2"  # the bank already holds 4-5
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    code, _, err = run(["paigow", "settle", "--rules", "nsw", str(path)], capsys)
    assert code == 2 and "4-5 appears 2 times" in err


def test_settle_act_example_is_as_documented(capsys) -> None:
    # docs/paigow.md shows this command's output: ACT 13.8 re-sets the house hand, and ACT 15.10
    # leaves a payable $30 win on a $20 table paid in full.
    root = Path(__file__).parents[2]
    command = "tablectl paigow settle --rules act docs/examples/paigow-round-act.json"
    doc = (root / "docs" / "paigow.md").read_text()
    shown = doc.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    code, out, _ = run([*command.split()[1:-1], str(root / command.split()[-1])], capsys)
    assert code == 0 and out == shown
    assert "net      $28.50" in out and "ACT 13.8" in out
