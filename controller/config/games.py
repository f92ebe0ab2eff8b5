"""The game sections, `[paigow]` and `[uth]`: read, checked, and built into the round machine's
own config (`PaiGowConfig`, `UthConfig`: defined once, by the rounds).

A reader returns a `Section`: the values the devices' needs depend on (so their problems are
reported in the same pass even when the game's section has errors) and, when it has none, how to
build the machine's config (a UTH pool's id and timeout also come from the table id and [link]).
Every rule a setting rests on is cited; docs/configuration.md documents every key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from controller.config.model import (
    BASIS_POINTS,
    MAX_JACKPOT_WAGER,
    JackpotConfig,
    LinkConfig,
    paytables,
)
from controller.config.reader import MISSING, Table
from controller.games.paigow.bank import MAX_BANKS_PER_BOX
from controller.games.paigow.bank import MAX_BOXES as PAIGOW_MAX_BOXES
from controller.games.paigow.money import STANDARD_COMMISSION_BP
from controller.games.paigow.profiles import Profile
from controller.games.uth.deal import MAX_BOXES as UTH_MAX_BOXES
from shared.errors import InputError
from shared.money import dollars

if TYPE_CHECKING:
    from controller.games.uth.evaluator import Category
    from controller.games.uth.paytables import PayTable
    from controller.rounds.paigow.state import PaiGowConfig
    from controller.rounds.uth.state import UthConfig

GAMES = ("paigow", "uth")
DEAL_METHODS = ("shuffler", "shoe")
_POOL_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")

# (table_id, link) -> the round machine's config; raises InputError for a check of its own.
Build = Callable[[str, LinkConfig], Any]


@dataclass(frozen=True)
class Section:
    needs: dict[str, Any]  # game_needs' values as read (None where a value was bad)
    build: Build
    jackpot: JackpotConfig | None = None  # UTH: [uth.jackpot] as written


def _profile_option(t: Table, name: str, profile: Profile | None, only: Profile, rule: str) -> Any:
    """An option that exists only in one profile's rules; elsewhere setting it is an error."""
    if not t.has(name):
        return None
    value = t.boolean(name)
    if profile is not None and profile is not only:
        t.error(name, f"applies only to profile {only} ({rule}); remove it for profile {profile}")
    return value


def read_paigow(t: Table) -> Section:
    rules = t.string("rules", choices=[p.value for p in Profile])
    profile = Profile(rules) if rules else None
    boxes = t.integer("boxes", PAIGOW_MAX_BOXES, lo=1, hi=PAIGOW_MAX_BOXES)
    commission = t.integer("commission_bp", STANDARD_COMMISSION_BP, lo=0, hi=STANDARD_COMMISSION_BP)

    steal = _profile_option(t, "steal_offered", profile, Profile.NZ, "NZ 9.6")
    notice = _profile_option(t, "multiples_notice", profile, Profile.ACT, "ACT 5.1(b)")
    # NSW 8.2 always lets a player/banker steal; ACT has no steal; NZ 9.6 only where offered.
    steal_offered = profile is Profile.NSW or (profile is Profile.NZ and bool(steal))
    # ACT 5.1(b): multiples of the minimum "unless specified otherwise".
    multiples_notice = profile is Profile.ACT and notice is not False

    unpayable = _profile_option(t, "unpayable_up", profile, Profile.ACT, "ACT 15.10")
    cobank_max = t.boolean("cobank_box_maximum", None)
    if cobank_max is not None and profile is Profile.NSW:
        t.error("cobank_box_maximum", "nsw has no co-banking (NSW 11.1); remove it")
    # Readings the seeds leave open (docs/rounds-paigow.md, "What a regulator should confirm").
    clockwise_delivery = t.boolean("clockwise_delivery", None)  # NSW 12.1, NZ 10.1 are silent
    if clockwise_delivery is False and profile is Profile.ACT:
        t.error("clockwise_delivery", "act delivers clockwise (ACT 9.1); remove it")
    miscount_make_up = t.boolean("miscount_make_up", None)  # NZ 12.17 in NSW/ACT
    if miscount_make_up is not None and profile is Profile.NZ:
        t.error("miscount_make_up", "nz always makes up a miscount (NZ 12.17); remove it")
    banks = t.integer("banks_per_box", 1, lo=1, hi=MAX_BANKS_PER_BOX)
    if banks not in (None, 1) and profile not in (None, Profile.NSW):
        t.error(
            "banks_per_box",
            f"must be 1 for profile {profile} (NZ 5.4 and ACT 6.7 allow one bank of two rounds;"
            " only NSW 6.7 allows up to 3)",
        )

    limits = None
    lt = t.table("limits")
    if lt is None:
        t.error("limits", "required table is missing ([paigow.limits] with minimum)")
    else:
        chip = lt.cents("chip_unit", 100)
        minimum = lt.cents("minimum")
        maximum = lt.cents("maximum", None)
        liability = lt.cents("house_liability", None)
        if liability is not None and profile is Profile.NSW:
            lt.error("house_liability", "nsw has no co-banking (NSW 11.1); remove it")
        for name, value in (("minimum", minimum), ("maximum", maximum)):
            if value is not None and chip and value % chip:
                lt.error(name, f"must be a whole number of {chip}-cent chips, got {value}")
        if minimum is not None and maximum is not None and maximum < minimum:
            lt.error("maximum", f"must be at least the minimum {minimum}, got {maximum}")
        lt.done()
        limits = (minimum, maximum, chip, liability)
    t.done()

    def build(table_id: str, link: LinkConfig) -> PaiGowConfig:
        from controller.games.paigow.money import TableMoney
        from controller.rounds.paigow.state import PaiGowConfig

        assert profile is not None and limits is not None  # built only without errors
        minimum, maximum, chip, liability = limits
        money = TableMoney(
            minimum,
            maximum,
            chip,
            commission,
            house_liability=liability,
            cobank_box_maximum=cobank_max,
            unpayable_up=unpayable is not False,
        )
        return PaiGowConfig(
            profile=profile,
            boxes=boxes,
            money=money,
            max_banks_per_box=banks,
            steal_offered=steal_offered,
            multiples_notice=multiples_notice,
            clockwise_delivery=clockwise_delivery,
            miscount_make_up=bool(miscount_make_up),
        )

    return Section({"profile": profile, "boxes": boxes}, build)


def _paytable(
    t: Table, name: str, categories: tuple[Category, ...], default: PayTable
) -> PayTable | None:
    text = t.string(name, None)
    if text is None:
        return default if not t.has(name) else None
    try:
        return paytables().parse_paytable(text, categories)
    except InputError as exc:
        t.error(name, str(exc))
        return None


def _jackpot(t: Table | None) -> JackpotConfig:
    if t is None:
        return JackpotConfig()
    d = JackpotConfig()
    enabled = t.boolean("enabled", False)
    pool_id = t.string(
        "pool_id",
        MISSING if enabled else None,
        pattern=_POOL_ID,
        what="1-64 characters of A-Z a-z 0-9 _ . -",
    )
    wager = t.cents("wager", d.wager)
    if wager is not None and wager > MAX_JACKPOT_WAGER:
        t.error("wager", f"must be at most {MAX_JACKPOT_WAGER} cents "
                f"({dollars(MAX_JACKPOT_WAGER)}), the most head office accepts by default "
                f"([service] max_jackpot_wager; 15.2.3), got {wager} ({dollars(wager)})")
        wager = None
    increment = t.integer("increment_bp", MISSING if enabled else 0, lo=0, hi=BASIS_POINTS)
    hidden = t.integer("hidden_bp", 0, lo=0, hi=BASIS_POINTS)
    if increment is not None and hidden is not None and increment + hidden > BASIS_POINTS:
        t.error("hidden_bp", f"increment_bp + hidden_bp must be at most {BASIS_POINTS}")
    seed = t.cents("seed", MISSING if enabled else 0, positive=False)
    ceiling = t.cents("ceiling", None)
    if ceiling is not None and seed is not None and ceiling < seed:
        t.error("ceiling", f"must be at least the seed {seed}, got {ceiling}")

    awards = d.awards
    at = t.table("awards")
    if at is not None:
        from controller.games.uth.evaluator import Category
        from controller.games.uth.paytables import JackpotPayTable

        a = JackpotPayTable()

        def share(name: str, default: Fraction) -> Fraction | None:
            bp = at.integer(name, int(default * BASIS_POINTS), lo=0, hi=BASIS_POINTS)
            return None if bp is None else Fraction(bp, BASIS_POINTS)

        values = {
            "royal_minimum": at.cents("royal_minimum", a.royal_minimum, positive=False),
            "royal_share": share("royal_share_bp", a.royal_share),
            "straight_flush_minimum": at.cents(
                "straight_flush_minimum", a.straight_flush_minimum, positive=False
            ),
            "straight_flush_share": share("straight_flush_share_bp", a.straight_flush_share),
            "bonus_for_royal": at.cents("bonus_for_royal", 0, positive=False),
            "bonus_for_straight_flush": at.cents("bonus_for_straight_flush", 0, positive=False),
        }
        fixed = {
            cat: at.cents(cat.label, a.fixed[cat], positive=False)
            for cat in (Category.FOUR_OF_A_KIND, Category.FULL_HOUSE, Category.FLUSH)
        }
        at.done()
        if None not in values.values() and None not in fixed.values():
            awards = JackpotPayTable(**values, fixed=MappingProxyType(fixed))  # type: ignore[arg-type]
    t.done()
    return JackpotConfig(
        enabled=enabled,
        pool_id=pool_id,
        wager=wager,
        increment_bp=increment,
        hidden_bp=hidden,
        seed=seed,
        ceiling=ceiling,
        awards=awards,
    )


def read_uth(t: Table) -> Section:
    boxes = t.integer("boxes", UTH_MAX_BOXES, lo=1, hi=UTH_MAX_BOXES)
    method = t.string("deal_method", "shuffler", choices=DEAL_METHODS)
    decks = t.integer("decks", 2 if method == "shuffler" else 1, lo=1, hi=2)
    if method == "shoe" and decks == 2:
        t.error("decks", "a card shoe holds a single deck (UTH rule 2.4.1): use 1 with a shoe")

    limits = None
    lt = t.table("limits")
    if lt is None:
        t.error("limits", "required table is missing ([uth.limits] with ante_min, ante_max, ...)")
    else:
        chip = lt.cents("chip_unit", 100)
        v = {n: lt.cents(n) for n in ("ante_min", "ante_max", "trips_min", "trips_max")}
        for name, value in v.items():
            if value is not None and chip and value % chip:
                lt.error(name, f"must be a whole number of {chip}-cent chips, got {value}")
        for lo, hi in (("ante_min", "ante_max"), ("trips_min", "trips_max")):
            if v[lo] is not None and v[hi] is not None and v[hi] < v[lo]:
                lt.error(hi, f"must be at least {lo} {v[lo]}, got {v[hi]}")
        # UTH 6.1: the sign's maximum for the Play area; omitted: 4 x ante_max (the largest Play).
        v["play_max"] = lt.cents("play_max", None)
        play_max = v["play_max"]
        if play_max is not None and chip and play_max % chip:
            lt.error("play_max", f"must be a whole number of {chip}-cent chips, got {play_max}")
        if play_max is not None and v["ante_max"] is not None and play_max < v["ante_max"]:
            lt.error("play_max", f"must be at least ante_max {v['ante_max']} (a 1x Play on a"
                                 f" maximum Ante, 9.3.2), got {play_max}")
        lt.done()
        limits = (v, chip)

    p = paytables()
    blind, trips = p.BLIND_PAYTABLE, p.TRIPS_PAYTABLE
    pt = t.table("paytables")
    if pt is not None:
        blind = _paytable(pt, "blind", p.BLIND_CATEGORIES, p.BLIND_PAYTABLE)
        trips = _paytable(pt, "trips", p.TRIPS_CATEGORIES, p.TRIPS_PAYTABLE)
        pt.done()
    jackpot = _jackpot(t.table("jackpot"))
    exposure_preflop_only = t.boolean("exposure_preflop_only", False)  # UTH 11.4.1 reading
    t.done()

    def build(table_id: str, link: LinkConfig) -> UthConfig:
        from controller.games.uth.deal import DealMethod
        from controller.games.uth.settlement import Limits, SettlementRules, Spot
        from controller.rounds.uth.state import UthConfig

        assert limits is not None  # built only without errors
        v, chip = limits
        ante = Limits(v["ante_min"], v["ante_max"])
        rules = SettlementRules(
            trips=trips,
            blind=blind,
            # The Blind equals the Ante (UTH 5.3) and shares its sign; Play follows from the Ante.
            limits={
                Spot.ANTE: ante,
                Spot.BLIND: ante,
                Spot.TRIPS: Limits(v["trips_min"], v["trips_max"]),
                **({Spot.PLAY: Limits(0, v["play_max"])} if v["play_max"] is not None else {}),
            },
        )
        return UthConfig(
            boxes=boxes,
            decks=(1, 2) if decks == 2 else (1,),
            deal_method=DealMethod(method),
            rules=rules,
            jackpot_table=jackpot.awards,
            jackpot_wager=jackpot.wager,
            pool_id=jackpot.pool_id or f"{table_id}-local",
            pool=jackpot.new_pool(),
            linked=link.enabled,
            pool_timeout_ms=int(link.pool_timeout_s * 1000),
            chip_unit=chip,
            exposure_preflop_only=exposure_preflop_only,
        )

    needs = {"boxes": boxes, "deal_method": method, "decks": decks, "jackpot": jackpot.enabled}
    return Section(needs, build, jackpot)


READERS = {"paigow": read_paigow, "uth": read_uth}
