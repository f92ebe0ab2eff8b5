"""controller.config: examples, defaults, and every error named by key path in one pass."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from controller.config import (
    ConfigError,
    config_json,
    load_config,
    validate_text,
)
from controller.games.paigow.profiles import Profile
from controller.games.uth.evaluator import Category
from controller.games.uth.paytables import BLIND_PAYTABLE, TRIPS_PAYTABLE, Odds
from controller.games.uth.settlement import Spot
from shared.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

PAIGOW = """
table_id = "T1"
game = "paigow"
[paigow]
rules = "nsw"
[paigow.limits]
minimum = 2500
[devices]
simulate = true
"""

UTH = """
table_id = "U1"
game = "uth"
[uth.limits]
ante_min = 1000
ante_max = 100000
trips_min = 500
trips_max = 50000
[devices]
simulate = true
"""


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        validate_text(text, "table.toml")
    return info.value.errors


def test_examples_exist() -> None:
    names = {p.name for p in EXAMPLES.glob("*.toml")}
    assert {"paigow-nsw.toml", "paigow-nz.toml", "paigow-act.toml", "uth-nsw.toml"} <= names


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_every_example_validates(path: Path) -> None:
    cfg = load_config(path)
    json.dumps(config_json(cfg))
    assert (cfg.paigow is None) != (cfg.uth is None)


def test_example_values() -> None:
    nsw = load_config(EXAMPLES / "paigow-nsw.toml")
    assert nsw.paigow is not None and nsw.paigow.profile is Profile.NSW
    assert nsw.paigow.max_banks_per_box == 3 and nsw.paigow.steal_offered
    assert nsw.devices.gpio is not None and len(nsw.devices.gpio.chung) == 8
    assert nsw.devices.shaker is not None and nsw.devices.shaker.usb_vendor == "0403"
    nz = load_config(EXAMPLES / "paigow-nz.toml")
    assert nz.paigow is not None and nz.paigow.steal_offered
    act = load_config(EXAMPLES / "paigow-act.toml")
    assert act.paigow is not None and act.paigow.multiples_notice and act.boxes == 6
    assert act.paigow.money.minimum == 1000
    uth = load_config(EXAMPLES / "uth-nsw.toml")
    assert uth.uth is not None and uth.jackpot is not None
    assert uth.jackpot.enabled and uth.uth.decks == (1, 2)
    assert uth.jackpot.increment == Fraction(1, 4)
    pool = uth.uth.pool  # the machine's pool, built from [uth.jackpot]
    assert pool == uth.jackpot.new_pool() and pool.increment == Fraction(1, 4)
    assert pool.amount == pool.seed == 5_000_000 and pool.ceiling == 50_000_000
    assert uth.uth.pool_id == uth.jackpot.pool_id and uth.uth.linked == uth.link.enabled
    assert uth.link.port == 8883 and uth.link.client_id == "tablectl-UTH-07"
    assert uth.link.tls is not None and uth.link.tls.ca == Path("/etc/tablectl/ca.pem")


def test_paigow_defaults() -> None:
    cfg = validate_text(PAIGOW)
    assert cfg.table_id == "T1" and cfg.game == "paigow" and cfg.uth is None
    pg = cfg.paigow
    assert pg is not None
    assert (pg.boxes, pg.money.commission_bp, pg.max_banks_per_box) == (8, 500, 1)
    assert pg.money.maximum is None and pg.money.chip_unit == 100
    assert cfg.service.state_dir == Path("/var/lib/tablectl")
    assert cfg.service.runtime_dir == Path("/run/tablectl")
    assert cfg.service.socket_group == "tablectl" and cfg.service.watchdog
    assert cfg.link.enabled is False and cfg.link.client_id == "tablectl-T1"
    assert cfg.link.pool_timeout_s == 5.0
    assert cfg.devices.simulate and cfg.devices.gpio is None


def test_uth_defaults_are_the_seeds() -> None:
    cfg = validate_text(UTH)
    u = cfg.uth
    assert u is not None and cfg.boxes == 7
    assert u.rules.blind == BLIND_PAYTABLE and u.rules.trips == TRIPS_PAYTABLE
    assert (u.deal_method, u.decks) == ("shuffler", (1, 2))
    assert cfg.jackpot is not None and cfg.jackpot.enabled is False
    assert u.jackpot_table.royal_minimum == 5_000_000
    assert u.jackpot_table.fixed[Category.FLUSH] == 10_000
    assert u.pool_id == "U1-local" and not u.linked  # no pool id: the table's own pool


def test_message_names_key_path_and_reason() -> None:
    text = PAIGOW.replace("minimum = 2500", "minimum = -5")
    assert errors_of(text) == [
        "table.toml: paigow.limits.minimum: must be a positive integer number of cents, got -5"
    ]
    with pytest.raises(InputError):
        validate_text(text)


def test_all_errors_in_one_pass() -> None:
    text = """
table_id = "bad id"
game = "paigow"
colour = "red"
[paigow]
rules = "vic"
boxes = 9
[paigow.limits]
minimum = 25.5
[service]
state_dir = "relative/dir"
[devices]
simulate = true
"""
    errors = errors_of(text)
    joined = "\n".join(errors)
    for key in (
        "table_id:",
        "colour: unknown key",
        "paigow.rules: must be one of nsw, nz, act",
        "paigow.boxes: must be within 1..8, got 9",
        "paigow.limits.minimum:",
        "service.state_dir: must be an absolute path",
    ):
        assert key in joined, key
    assert len(errors) == 6
    error = ConfigError(errors)
    assert str(error) == joined


def test_float_money_is_rejected_clearly() -> None:
    (err,) = errors_of(PAIGOW.replace("minimum = 2500", "minimum = 25.0"))
    assert "paigow.limits.minimum" in err and "float" in err and "never a float" in err


def test_unknown_keys_suggest_the_right_one() -> None:
    errs = errors_of(PAIGOW.replace("[paigow.limits]", "comission_bp = 400\n[paigow.limits]"))
    assert errs == [
        "table.toml: paigow.comission_bp: unknown key (did you mean 'commission_bp'?); expected"
        " one of: banks_per_box, boxes, clockwise_delivery, cobank_box_maximum, commission_bp,"
        " limits, miscount_make_up, multiples_notice, rules, steal_offered, unpayable_up"
    ]
    errs = errors_of(PAIGOW + "[devices.gpio]\nchung_pins = [1]\n")
    assert "devices.gpio.chung_pins: unknown key" in errs[0]


def test_exactly_the_configured_games_section() -> None:
    assert "uth: the table plays paigow: remove [uth]" in errors_of(PAIGOW + "[uth]\nboxes=7\n")[0]
    missing = errors_of('table_id = "x"\ngame = "uth"\n[devices]\nsimulate = true\n')
    assert missing == ["table.toml: uth: required table [uth] is missing for game uth"]
    assert "game: must be one of paigow, uth" in errors_of('table_id = "x"\ngame = "poker"\n')[0]


def test_profile_options() -> None:
    nz = PAIGOW.replace('"nsw"', '"nz"')
    assert validate_text(nz).paigow.steal_offered is False  # type: ignore[union-attr]
    on = nz.replace("[paigow.limits]", "steal_offered = true\n[paigow.limits]")
    assert validate_text(on).paigow.steal_offered is True  # type: ignore[union-attr]
    act = PAIGOW.replace('"nsw"', '"act"')
    assert validate_text(act).paigow.multiples_notice is True  # type: ignore[union-attr]
    assert validate_text(act).paigow.steal_offered is False  # type: ignore[union-attr]
    off = act.replace("[paigow.limits]", "multiples_notice = false\n[paigow.limits]")
    assert validate_text(off).paigow.multiples_notice is False  # type: ignore[union-attr]
    (err,) = errors_of(PAIGOW.replace("[paigow.limits]", "steal_offered = true\n[paigow.limits]"))
    assert "paigow.steal_offered: applies only to profile nz (NZ 9.6)" in err
    (err,) = errors_of(act.replace("[paigow.limits]", "banks_per_box = 2\n[paigow.limits]"))
    assert "paigow.banks_per_box: must be 1 for profile act" in err
    (err,) = errors_of(PAIGOW.replace("[paigow.limits]", "commission_bp = 600\n[paigow.limits]"))
    assert "paigow.commission_bp: must be within 0..500, got 600" in err


def test_limits_rules() -> None:
    text = PAIGOW.replace("minimum = 2500", "minimum = 2550\nmaximum = 2000\nchip_unit = 100")
    errs = errors_of(text)
    assert any("minimum: must be a whole number of 100-cent chips" in e for e in errs)
    assert any("maximum: must be at least the minimum" in e for e in errs)
    errs = errors_of(UTH.replace("ante_max = 100000", "ante_max = 500"))
    assert errs == ["table.toml: uth.limits.ante_max: must be at least ante_min 1000, got 500"]


def test_uth_paytables_deal_and_jackpot() -> None:
    text = UTH + '[uth.paytables]\nblind = "500,50,10,3,2,1"\ntrips = "50,40,30,9,7,4,3"\n'
    u = validate_text(text).uth
    assert u is not None and u.rules.blind[Category.FLUSH] == Odds(2)
    assert u.rules.trips[Category.FULL_HOUSE] == Odds(9)
    (err,) = errors_of(text.replace("50,40,30,9,7,4,3", "1,2,x"))
    assert "uth.paytables.trips: pay table '1,2,x': need 7 odds" in err
    (err,) = errors_of(
        UTH.replace("[devices]", '[uth]\ndeal_method = "shoe"\ndecks = 2\n[devices]')
    )
    assert "uth.decks: a card shoe holds a single deck (UTH rule 2.4.1)" in err
    shoe = validate_text(UTH.replace("[devices]", '[uth]\ndeal_method = "shoe"\n[devices]'))
    assert shoe.uth is not None and shoe.uth.decks == (1,)

    errs = errors_of(UTH + "[uth.jackpot]\nenabled = true\n")
    assert [e.split(": ")[1] for e in errs] == [
        "uth.jackpot.pool_id",
        "uth.jackpot.increment_bp",
        "uth.jackpot.seed",
    ]
    jackpot = (
        UTH
        + '[uth.jackpot]\nenabled = true\npool_id = "p1"\nincrement_bp = 9000\nhidden_bp = 2000\n'
        + "seed = 100000\nceiling = 5000\n"
        + "[uth.jackpot.awards]\nflush = 2.5\nroyal_share_bp = 5000\n"
    )
    joined = "\n".join(errors_of(jackpot))
    assert "uth.jackpot.hidden_bp: increment_bp + hidden_bp must be at most 10000" in joined
    assert "uth.jackpot.ceiling: must be at least the seed 100000" in joined
    assert "uth.jackpot.awards.flush" in joined and "float" in joined
    good = jackpot.replace("9000", "2000").replace("5000\n[", "500000\n[").replace("2.5", "12000")
    j = validate_text(good).jackpot  # type: ignore[union-attr]
    assert j.awards.royal_share == Fraction(1, 2) and j.awards.fixed[Category.FLUSH] == 12000
    assert j.new_pool().hidden == Fraction(1, 5)


GPIO_PAIGOW = (
    PAIGOW.replace("simulate = true", "simulate = false")
    + """
[devices.shaker]
[devices.gpio]
chung = [0, 1, 2, 3, 4, 5, 6, 7]
off = [8, 9, 10, 11, 12, 13, 14, 15]
table_closed = 27
[devices.gpio.keypad]
shake = 20
delivered = 21
"""
)


def test_gpio_pins() -> None:
    cfg = validate_text(GPIO_PAIGOW)
    gpio = cfg.devices.gpio
    assert gpio is not None and gpio.keypad == {"shake": 20, "delivered": 21}
    assert cfg.devices.shaker is not None and cfg.devices.shaker.baud == 115200
    assert cfg.devices.shaker.port == "/dev/tablectl-shaker"
    text = GPIO_PAIGOW.replace("delivered = 21", "delivered = 7").replace("[0, 1", "[0, 28, 1")
    joined = "\n".join(errors_of(text))
    assert "devices.gpio.chung[1]: must be a BCM GPIO number 0..27, got 28" in joined
    assert "devices.gpio.chung: needs one pin per box: 8 pins, got 9" in joined
    assert "devices.gpio.keypad.delivered: GPIO7 is already used by devices.gpio.chung[7]" in joined
    errs = errors_of(GPIO_PAIGOW.replace("table_closed = 27", "bet_sensor = [22]"))
    assert errs == ["table.toml: devices.gpio.bet_sensor: not used by game paigow; remove it"]
    errs = errors_of(GPIO_PAIGOW.replace("table_closed = 27", 'pin_factory = "mock"'))
    assert errs == ["table.toml: devices.gpio.pin_factory: mock pins only with simulate = true"]


def test_real_hardware_needs_its_devices() -> None:
    text = PAIGOW.replace("simulate = true", "simulate = false")
    assert errors_of(text) == [
        "table.toml: devices.shaker: required for game paigow on real hardware"
        " (or simulate = true)",
        "table.toml: devices.gpio: required on real hardware (or simulate = true)",
    ]
    errs = errors_of(GPIO_PAIGOW.replace("[devices.shaker]", "[devices.shuffler]"))
    assert "devices.shuffler: not used by game paigow" in errs[0]
    assert "devices.shaker: required" in errs[1]
    text = GPIO_PAIGOW.replace(
        "[devices.shaker]", '[devices.shaker]\nbaud = 1000\nusb_vendor = "0403"'
    )
    joined = "\n".join(errors_of(text))
    assert "devices.shaker.baud: must be one of" in joined
    assert "devices.shaker.usb_product: usb_vendor and usb_product go together" in joined


def test_link() -> None:
    plain = validate_text(PAIGOW + '[link]\nenabled = true\nhost = "ho.example"\n')
    assert plain.link.port == 1883 and plain.link.tls is None
    errs = errors_of(PAIGOW + '[link]\nenabled = true\npassword = "hunter2"\n')
    assert errs[0] == "table.toml: link.host: required key is missing"
    assert "link.password: secrets never go in this file" in errs[1]
    text = PAIGOW + '[link]\npassword_file = "/etc/p"\n[link.tls]\nca = "/ca"\ncert = "/c"\n'
    joined = "\n".join(errors_of(text))
    assert "link.tls.key: cert and key go together" in joined
    assert "link.password_file: needs a username" in joined
    (err,) = errors_of(PAIGOW + "[link]\npool_timeout_s = 0\n")
    assert "link.pool_timeout_s: must be a positive number of seconds" in err


def test_load_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")
    bad = tmp_path / "table.toml"
    bad.write_text("table_id = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    bad.write_text(PAIGOW.replace("2500", "-5"))
    with pytest.raises(ConfigError) as info:
        load_config(bad)
    assert info.value.errors[0].startswith(f"{bad}: paigow.limits.minimum:")


def test_config_json_has_no_secrets_and_round_trips_to_json() -> None:
    cfg = load_config(EXAMPLES / "uth-nsw.toml")
    data = config_json(cfg)
    assert data["uth"]["blind_paytable"]["flush"] == "3 to 2"
    assert data["uth"]["jackpot"]["awards"]["straight_flush_share"] == "1/10"
    assert data["link"]["password_file"] == "/etc/tablectl/link-password"
    assert data["boxes"] == 7
    assert "hunter" not in json.dumps(data)


# --- bounds (issue 12 item 7): nothing infinite, nothing absurd reaches the daemon -------------


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400", "-1", "0", "0.01", "301"])
def test_pool_timeout_must_be_finite_and_within_bounds(tmp_path: Path, value: str) -> None:
    """`tablectl config validate` refuses it, naming the field (on main `inf` passed and
    crashed start-up in int(inf * 1000))."""
    import subprocess
    import sys

    path = tmp_path / "table.toml"
    path.write_text(PAIGOW + f"[link]\npool_timeout_s = {value}\n")
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "config", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert (
        f"{path}: link.pool_timeout_s: must be a positive number of seconds within 0.1..300.0"
        in (run.stdout)
    )


def test_pool_timeout_within_bounds_is_kept() -> None:
    cfg = validate_text(PAIGOW + "[link]\npool_timeout_s = 0.5\n")
    assert cfg.link.pool_timeout_s == 0.5


def test_every_amount_has_a_maximum_and_all_are_reported_in_one_pass() -> None:
    huge = 10**23
    text = UTH.replace("ante_max = 100000", f"ante_max = {huge}") + (
        f'[uth.jackpot]\nenabled = true\npool_id = "p"\nincrement_bp = 100\nwager = {huge}\n'
        f"seed = {huge}\n[uth.jackpot.awards]\nroyal_minimum = {huge}\n"
        "[link]\npool_timeout_s = inf\n"
    )
    errors = errors_of(text)
    for key in (
        "uth.limits.ante_max",
        "uth.jackpot.wager",
        "uth.jackpot.seed",
        "uth.jackpot.awards.royal_minimum",
    ):
        assert (
            f"table.toml: {key}: must be at most 10000000000 cents ($100,000,000), got 1.000e+23"
            in errors
        )
    assert any(e.startswith("table.toml: link.pool_timeout_s:") for e in errors)
    assert len(errors) == 5
    # The maximum itself is allowed.
    ok = UTH.replace("ante_max = 100000", "ante_max = 10000000000")
    ante = validate_text(ok).uth.rules.limits_for(Spot.ANTE)  # type: ignore[union-attr]
    assert ante.maximum == 10**10


def test_service_roles_and_development_mode() -> None:
    cfg = validate_text(PAIGOW)
    assert (cfg.service.tech_group, cfg.service.super_group) == ("tablectl-tech", "tablectl-super")
    assert cfg.service.development is False
    errors = errors_of(
        PAIGOW + '[service]\ntech_group = "staff"\nsuper_group = "staff"\ndevelopment = "yes"\n'
    )
    assert errors == [
        "table.toml: service.development: must be true or false, got a string 'yes'",
        "table.toml: service.super_group: must differ from tech_group (read-only and acting roles)",
    ]


def test_journal_section_bounded_and_every_problem_named() -> None:
    from controller.config.journal import JournalConfig

    base = (EXAMPLES / "uth-nsw.toml").read_text(encoding="utf-8")
    assert validate_text(base).journal == JournalConfig()  # nothing pruned without it
    cfg = validate_text(base + "\n[journal]\nkeep_rounds = 16500\nkeep_days = 30\n"
                        "keep_archives_days = 365\nsegment_rounds = 1000\n"
                        'archive_dir = "/persistent/archive"\n').journal
    assert (cfg.keep_rounds, cfg.keep_days, cfg.keep_archives_days, cfg.segment_rounds,
            str(cfg.archive_dir)) == (16500, 30, 365, 1000, "/persistent/archive")
    with pytest.raises(ConfigError) as err:
        validate_text(base + "\n[journal]\nkeep_rounds = -1\nkeep_days = 1e3\n"
                      "segment_rounds = 5\nkeep_archives_days = 3\narchive_dir = \"rel\"\n"
                      "keep = 3\n")
    lines = err.value.errors
    assert [line.split(":")[1].strip() for line in lines] == [
        "journal.segment_rounds", "journal.keep_rounds", "journal.keep_days",
        "journal.archive_dir", "journal.keep_archives_days", "journal.keep"], lines


def test_keypad_actions_are_checked_against_the_game_every_one_named() -> None:
    """Issue 13: a button wired to an action no machine handles (`new_round`, `confirm`,
    `cancel_jackpot` in the old examples) is a configuration error, each one named with the
    game, in one pass; an action of the other game is one too."""
    text = GPIO_PAIGOW.replace("delivered = 21", "confirm = 21\nnew_round = 24\ndeal = 25")
    errs = errors_of(text)
    for action in ("confirm", "new_round", "deal"):  # deal: UTH's, not Pai Gow's
        assert any(f"devices.gpio.keypad.{action}: game paigow has no keypad action" in e
                   for e in errs), (action, errs)
    assert len(errs) == 3
    assert not any("shake" in e.split(":")[1] for e in errs)  # a Pai Gow action passes


def test_the_configs_keypad_actions_are_the_running_machines() -> None:
    from controller.rounds.keypads import keypad_actions
    from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
    from controller.rounds.uth import UthMachine

    assert keypad_actions("uth") == UthMachine().dealer_actions()
    assert keypad_actions("paigow") == PaiGowMachine(PaiGowConfig(Profile.NSW)).dealer_actions()
    assert keypad_actions("blackjack") is None


# The JSON view (`tablectl status`, `config show`) of every example and the error lines of broken
# game sections, as they were before the games' configs became the round machines' own
# (tests/config/data/config_json.json was written by the code before that change; since then
# only the examples' keypads (issue 13), `exposure_preflop_only`, the Pai Gow readings
# `clockwise_delivery`/`miscount_make_up`, `[journal]`, UTH's `play_max` (issue 30) and
# `devices.cardreader` (issue 29) were added).
BROKEN = {
 "pg-noprofile": 'table_id="t"\ngame="paigow"\n[paigow]\nrules="xx"\nboxes=9\nbanks_per_box=2\n'
                 '[paigow.limits]\nminimum=-5\n[devices]\nsimulate=true\n',
 "pg-nolimits": 'table_id="t"\ngame="paigow"\n[paigow]\nrules="nz"\nsteal_offered=true\n'
                'multiples_notice=true\n[devices]\nsimulate=true\n',
 "uth-bad": 'table_id="t"\ngame="uth"\n[uth]\nboxes=0\ndeal_method="shoe"\ndecks=2\n[uth.limits]\n'
            'ante_min=100\nante_max=50\ntrips_min=1.5\ntrips_max=100\n[uth.jackpot]\nenabled=true\n'
            '[devices]\nsimulate=true\n',
 "uth-nolimits": 'table_id="t"\ngame="uth"\n[uth]\n[uth.jackpot]\nenabled=true\npool_id="p"\n'
                 'increment_bp=9000\nhidden_bp=2000\nseed=100\nceiling=50\n[devices]\nsimulate=true\n',
}


def test_the_json_view_and_error_lines_are_unchanged() -> None:
    expected = json.loads((Path(__file__).parent / "data/config_json.json").read_text())
    got: dict[str, object] = {}
    for path in sorted(EXAMPLES.glob("*.toml")):
        name = f"examples/{path.name}"
        got[name] = config_json(validate_text(path.read_text(), name))
    for name, text in BROKEN.items():
        with pytest.raises(ConfigError) as raised:
            validate_text(text, name)
        got[name] = str(raised.value)
    assert json.dumps(got, indent=1) == json.dumps(expected, indent=1)


def test_the_games_configs_are_the_round_machines_own() -> None:
    # One definition each (issue 14): config builds the rounds' class, the machine takes it.
    import ast

    from controller.config.machine import build_machine
    from controller.rounds.paigow import PaiGowConfig
    from controller.rounds.uth import UthConfig

    nsw, uth = load_config(EXAMPLES / "paigow-nsw.toml"), load_config(EXAMPLES / "uth-nsw.toml")
    assert type(nsw.paigow) is PaiGowConfig and type(uth.uth) is UthConfig
    assert build_machine(nsw).config is nsw.paigow and build_machine(uth).config is uth.uth
    where = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "controller").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name in ("PaiGowConfig", "UthConfig")
    )
    assert where == ["controller/rounds/paigow/state.py", "controller/rounds/uth/state.py"]


# --- the jackpot wager head office accepts (issue 27 item 5) ----------------------------------

JACKPOT = '[uth.jackpot]\nenabled = true\npool_id = "p1"\nincrement_bp = 2500\nseed = 100000\n'


def test_a_jackpot_wager_above_what_head_office_accepts_is_refused() -> None:
    """On main a $21,474,836.48 jackpot wager validated, and head office then refused every
    increment of it (above its max_jackpot_wager, $1,000 by default)."""
    from dataclasses import fields

    from controller.config.model import MAX_JACKPOT_WAGER
    from headoffice.config import HeadOfficeConfig

    default = {f.name: f.default for f in fields(HeadOfficeConfig)}["max_jackpot_wager"]
    assert MAX_JACKPOT_WAGER == default == 100_000
    assert errors_of(UTH + JACKPOT + "wager = 2147483648\n") == [
        "table.toml: uth.jackpot.wager: must be at most 100000 cents ($1,000.00), the most head "
        "office accepts by default ([service] max_jackpot_wager; 15.2.3), got 2147483648 "
        "($21,474,836.48)"]
    assert len(errors_of(UTH + JACKPOT + "wager = 100001\n")) == 1
    cfg = validate_text(UTH + JACKPOT + "wager = 100000\n")  # the limit itself is allowed
    assert cfg.jackpot is not None and cfg.jackpot.wager == 100_000


def test_config_validate_says_what_head_office_accepts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.cli.main import main as cli

    path = tmp_path / "table.toml"
    path.write_text(UTH + JACKPOT + "wager = 500\n")
    assert cli(["config", "validate", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: OK (uth, table U1)",
        "  note: uth.jackpot.wager is 500 cents ($5.00); head office accepts a jackpot wager up "
        "to 100000 cents ($1,000.00) by default ([service] max_jackpot_wager), and only the "
        "wager of pool 'p1' when that pool sets one ([[pools]] wager, 15.2.5.3): an increment "
        "at another wager is refused"]
    assert cli(["config", "validate", str(path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["notes"]) == 1
    path.write_text(UTH)  # no jackpot: nothing to say
    assert cli(["config", "validate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []
