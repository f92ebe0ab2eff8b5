"""The cut: each profile's traditional cuts and their options, and how a round's cut is decided.

- NSW Appendix 3 lists the cuts a player/banker may nominate (8.4.3); the cut die picks one of six
  (Appendix 4) when the House banks or the player/banker declines (8.4.3-8.4.4).
- NZ Appendix 5 lists the cuts; 9.3A: chosen by the player/banker, the game supervisor, or a
  random selection, which here uses a CSPRNG.
- ACT Appendix E lists the cuts a player/banker or co-banker may choose (8.4); the house uses
  Yat Dong Dong, the "house way cut" (8.3).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from itertools import product
from typing import Protocol, TypeVar

from controller.games.paigow.bank import BankHolder
from controller.games.paigow.profiles import Profile
from shared.errors import InputError


class Cut(StrEnum):
    """A cut, whatever a profile calls it; values are the commonest traditional names."""

    YAT_DONG_DONG = "Yat Dong Dong"
    CUP_SAY = "Cup Say"
    CHEE_YEE = "Chee Yee"
    DAI_PIN = "Dai Pin"
    JUNG_QUAT = "Jung Quat"
    LONG_TAU_FONG_MAY = "Long Tau/Fong May"
    WUI_FUNG_BANK = "Wui Fung Bank"
    FOOT_SAY = "Foot Say"
    HARBOUR_BRIDGE = "Harbour Bridge"
    GHAN_DONG_PING_SAY = "Ghan Dong Ping Say"
    PONG_YUN = "Pong Yun"
    BO_BO_GO_SING = "Bo Bo Go Sing"
    GHAN_DONG_CUP_SAY = "Ghan Dong Cup Say"
    YAT_KAI_SUM_MAY = "Yat Kai Sum May"
    ARN_LOK_PENG_SAR = "Arn Lok Peng Sar"
    SYDNEY_TOWER = "Sydney Tower"
    CHINA_BANK = "China Bank"
    CHONG_WAN_SUP_LOK = "Chong Wan Sup Lok"
    SEUNG_GWAI_PAK_MOON = "Seung Gwai Pak Moon"
    GUM_UN_QUE = "Gum Un Que"
    GIRL_RIGHT_AND_LEFT = "Girl on the Right and Left"


class CutOption(StrEnum):
    RIGHT = "right"
    LEFT = "left"
    TOP = "top"
    BOTTOM = "bottom"
    FRONT = "front"
    BACK = "back"
    HEAD = "head"
    TAIL = "tail"


class Axis(Enum):
    """One choice a cut asks for, e.g. "(Right or Left)"."""

    SIDE = (CutOption.RIGHT, CutOption.LEFT)
    LEVEL = (CutOption.TOP, CutOption.BOTTOM)
    DEPTH = (CutOption.FRONT, CutOption.BACK)
    END = (CutOption.HEAD, CutOption.TAIL)


@dataclass(frozen=True)
class CutSpec:
    cut: Cut
    traditional: str
    english: str
    axes: tuple[Axis, ...] = ()

    def describe(self) -> str:
        opts = "".join(" (" + " or ".join(o.title() for o in a.value) + ")" for a in self.axes)
        return f"{self.traditional}{opts} - {self.english}"


_S, _L, _D, _E = Axis.SIDE, Axis.LEVEL, Axis.DEPTH, Axis.END
C = Cut

# Names and options as each appendix prints them (its typos aside, see the doc).
_TABLES: dict[Profile, tuple[CutSpec, ...]] = {
    Profile.NSW: (  # NSW Appendix 3
        CutSpec(C.YAT_DONG_DONG, "Yat Dong Dong", "One Stack", (_S,)),
        CutSpec(C.CUP_SAY, "Cup Say", "Tiger", (_S, _L)),
        CutSpec(C.CHEE_YEE, "Chee Yee", "Chop the Ears", (_L,)),
        CutSpec(C.DAI_PIN, "Dai Pin", "Big Slice", (_S,)),
        CutSpec(C.JUNG_QUAT, "Jung Quat", "From the Heart", (_L,)),
        CutSpec(C.LONG_TAU_FONG_MAY, "Long Tau/Fong May", "Dragon Head/Phoenix Tail", (_S,)),
        CutSpec(C.WUI_FUNG_BANK, "Wui Fung Bank", "Hong Kong Bank"),
        CutSpec(C.FOOT_SAY, "Foot Say", "Four Across"),
        CutSpec(C.HARBOUR_BRIDGE, "Sydney Harbour Bridge", "Sydney Harbour Bridge"),
        CutSpec(C.GHAN_DONG_PING_SAY, "Ghan Dong Ping Say", "Kangaroo Jump", (_S,)),
        CutSpec(C.PONG_YUN, "Pong Yun", "Buddhas Signal", (_S,)),
        CutSpec(C.BO_BO_GO_SING, "Bo Bo Go Sing", "Boy Walks Up Stairs", (_S,)),
        CutSpec(C.GHAN_DONG_CUP_SAY, "Ghan Dong Cup Say", "Striped Tiger", (_S,)),
        CutSpec(C.YAT_KAI_SUM_MAY, "Yat Kai Sum May", "Chicken Three Ways"),
        CutSpec(C.ARN_LOK_PENG_SAR, "Arn Lok Peng Sar", "Flying Dragon", (_S,)),
        CutSpec(C.SYDNEY_TOWER, "Sydney Tower", "Sydney Tower"),
        CutSpec(C.CHINA_BANK, "China Bank", "China Bank"),
        CutSpec(C.CHONG_WAN_SUP_LOK, "Chong Wan Sup Lok", "Sixteen Across"),
        CutSpec(C.SEUNG_GWAI_PAK_MOON, "Seung Gwai Pak Moon", "Ghost Closing the Door"),
        # "(Right or Left Front to Back)": one choice, Right or Left; "front to back" describes it.
        CutSpec(C.GUM_UN_QUE, "Gum Un Que", "Double Bridge", (_S,)),
    ),
    Profile.NZ: (  # NZ Appendix 5
        CutSpec(C.YAT_DONG_DONG, "Yat Dong Dong", "1 Stack", (_S,)),
        CutSpec(C.CUP_SAY, "Cup Say", "Tiger", (_L, _S)),
        CutSpec(C.CHEE_YEE, "Chee Yee", "Chop the Ears", (_L,)),
        CutSpec(C.DAI_PIN, "Dai Pin", "Big Slice", (_S,)),
        CutSpec(C.JUNG_QUAT, "Jung Quat", "From the Heart", (_L,)),
        CutSpec(C.LONG_TAU_FONG_MAY, "Long Tau/Fong May", "Dragon Head/Phoenix Tail", (_S,)),
        CutSpec(C.WUI_FUNG_BANK, "Wui Fung Bank", "Hong Kong Bank"),
        CutSpec(C.FOOT_SAY, "Foot Say", "4 Across"),
        CutSpec(C.SEUNG_GWAI_PAK_MOON, "Seung Gwai Pak Moon", "Ghost Closing the Door"),
        CutSpec(C.PONG_YUN, "Pong Yun", "Buddha's Signal", (_S,)),
        CutSpec(C.CHINA_BANK, "China Bank", "China Bank"),
        CutSpec(C.HARBOUR_BRIDGE, "Harbour Bridge", "Harbour Bridge"),
        CutSpec(C.BO_BO_GO_SING, "Bo Bo Go Sing", "Boy Walks Up Stairs", (_S,)),
        CutSpec(C.GUM_UN_QUE, "Gum Un Que", "Double Bridge", (_S, _D)),
        CutSpec(C.GHAN_DONG_PING_SAY, "Ghan Dong Ping Say", "Kangaroo Jump", (_S,)),
        CutSpec(C.CHONG_WAN_SUP_LOK, "Chong Wan Sup Lok", "16 Across", (_L,)),
        CutSpec(C.YAT_KAI_SUM_MAY, "Yat Kai Sum May", "Chicken 3 Ways", (_S,)),
        CutSpec(C.GHAN_DONG_CUP_SAY, "Ghan Dong Cup Say", "Striped Tiger", (_S,)),
        CutSpec(C.ARN_LOK_PENG_SAR, "Arn Lok Peng Sar", "Flying Dragon", (_S, _E)),
        CutSpec(C.GIRL_RIGHT_AND_LEFT, "Girl on the Right and Left", "Girl on the Right and Left"),
    ),
    Profile.ACT: (  # Appendix E
        CutSpec(C.YAT_DONG_DONG, "Yat Dong Dong", "House Way", (_S,)),
        CutSpec(C.CUP_SAY, "Cup Say", "Tiger", (_S, _L)),
        CutSpec(C.FOOT_SAY, "Foot Say", "Four Across"),
        CutSpec(C.CHEE_YEE, "Chee Yee", "Chop The Ears", (_L,)),
        CutSpec(C.LONG_TAU_FONG_MAY, "Long Tau Fung May", "Dragon Head Phoenix Tail", (_E, _S)),
        CutSpec(C.DAI_PIN, "Die Pin", "Big Slice", (_S,)),
        CutSpec(C.PONG_YUN, "Pong Yun", "Buddha's Signal", (_S,)),
        CutSpec(C.WUI_FUNG_BANK, "Hong Kong Bank", "Hong Kong Bank"),
        CutSpec(C.CHINA_BANK, "China Bank", "China Bank"),
        CutSpec(C.JUNG_QUAT, "Jung Quat", "Take The Heart", (_L,)),
        CutSpec(C.HARBOUR_BRIDGE, "Harbour Bridge", "Sydney Bridge"),
        CutSpec(C.SEUNG_GWAI_PAK_MOON, "Seung Gwai Pak Moon", "Ghost Closing The Door"),
        CutSpec(C.BO_BO_GO_SING, "Bo Bo Go Sing", "Boy Walks Up Stairs", (_S,)),
        CutSpec(C.GUM_UN_QUE, "Gum Un Que", "Double Bridge"),
        CutSpec(C.GHAN_DONG_PING_SAY, "Ghan Dong Ping Say", "Kangaroo Jump", (_S,)),
        CutSpec(C.CHONG_WAN_SUP_LOK, "Chong Wan Sup Lok", "Sixteen Across", (_L,)),
        CutSpec(C.YAT_KAI_SUM_MAY, "Yat Kai Sum May", "Chicken Three Ways", (_S,)),
        CutSpec(C.GHAN_DONG_CUP_SAY, "Ghan Dong Cup Say", "Striped Tiger", (_S,)),
        CutSpec(C.SYDNEY_TOWER, "Sydney Tower", "Sydney Tower"),
        CutSpec(C.ARN_LOK_PENG_SAR, "Arn Lok Peng Sar", "Flying Dragon", (_E, _S)),
    ),
}

# NSW Appendix 4: the cut die's face -> the cut.
CUT_DIE: dict[int, Cut] = {
    1: Cut.LONG_TAU_FONG_MAY,
    2: Cut.JUNG_QUAT,
    3: Cut.CUP_SAY,
    4: Cut.DAI_PIN,
    5: Cut.WUI_FUNG_BANK,
    6: Cut.CHEE_YEE,
}
HOUSE_WAY_CUT = Cut.YAT_DONG_DONG  # ACT 8.3


def cut_table(profile: Profile) -> tuple[CutSpec, ...]:
    """The profile's traditional cuts in the order its appendix lists them."""
    return _TABLES[profile]


def cut_spec(profile: Profile, cut: Cut) -> CutSpec:
    for spec in _TABLES[profile]:
        if spec.cut is cut:
            return spec
    raise InputError(f"cut {cut.value!r} is not a traditional cut of profile {profile}")


def option_sets(profile: Profile, cut: Cut) -> list[frozenset[CutOption]]:
    """Every complete choice of options for `cut`: one option per axis ([frozenset()] if none)."""
    return [frozenset(combo) for combo in product(*(a.value for a in cut_spec(profile, cut).axes))]


def check_options(
    profile: Profile, cut: Cut, options: Collection[CutOption]
) -> frozenset[CutOption]:
    """`options` must pick exactly one option on each of the cut's axes, and nothing else."""
    spec = cut_spec(profile, cut)
    chosen = frozenset(options)
    for option in chosen:
        if not any(option in a.value for a in spec.axes):
            raise InputError(f"option {option.value!r} does not apply to {spec.describe()}")
    for axis in spec.axes:
        picked = [o for o in axis.value if o in chosen]
        if len(picked) != 1:
            wanted = " or ".join(o.value for o in axis.value)
            raise InputError(f"cut {spec.traditional!r} needs exactly one of {wanted}")
    return chosen


def cut_for_die(value: int) -> Cut:
    """NSW Appendix 4: the cut shown by the cut die (NSW 8.4.3-8.4.4)."""
    if isinstance(value, bool) or value not in CUT_DIE:
        raise InputError(f"cut die reads {value!r}: a die shows 1..6")
    return CUT_DIE[value]


# --- parsing names for the CLI ------------------------------------------------------------------


def _normalise(text: str) -> str:
    text = text.casefold().replace("'", "").replace("\u2019", "")
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text).split())


def _names() -> dict[str, Cut]:
    names: dict[str, Cut] = {}
    for cut in Cut:
        names[_normalise(cut.value)] = cut
        names[_normalise(cut.name)] = cut
    for table in _TABLES.values():
        for spec in table:
            names[_normalise(spec.traditional)] = spec.cut
            names[_normalise(spec.english)] = spec.cut
    return names


_NAMES = _names()
_OPTION_WORDS = {o.value: o for o in CutOption}


def parse_cut(profile: Profile, text: str) -> Cut:
    """A cut from its traditional or English name (any profile's spelling), case-insensitive.

    InputError if the name is unknown or the profile does not list the cut.
    """
    cut = _NAMES.get(_normalise(text))
    if cut is None:
        raise InputError(f"unknown cut {text!r}")
    cut_spec(profile, cut)  # raises when the profile does not list it
    return cut


def parse_cut_choice(profile: Profile, text: str) -> tuple[Cut, frozenset[CutOption]]:
    """A cut name followed by its options, e.g. "cup say right top" or "Tiger (Left, Bottom)"."""
    words = _normalise(text).split()
    for end in range(len(words), 0, -1):
        cut = _NAMES.get(" ".join(words[:end]))
        if cut is None:
            continue
        options = []
        for word in words[end:]:
            if word not in _OPTION_WORDS:
                raise InputError(f"unknown cut option {word!r} in {text!r}")
            options.append(_OPTION_WORDS[word])
        if len(set(options)) != len(options):
            raise InputError(f"repeated cut option in {text!r}")
        cut_spec(profile, cut)
        return cut, check_options(profile, cut, options)
    raise InputError(f"unknown cut {text!r}")


# --- deciding the round's cut -------------------------------------------------------------------


T = TypeVar("T")


class Chooser(Protocol):
    """What random selection needs: random.Random and secrets.SystemRandom both fit."""

    def choice(self, seq: Sequence[T], /) -> T: ...


class CutSource(StrEnum):
    PLAYER_BANKER = "player/banker"  # NSW 8.4.3, NZ 9.3A(a), ACT 8.4
    CUT_DIE = "cut die"  # NSW 8.4.3-8.4.4, Appendix 4
    HOUSE_WAY = "house way"  # ACT 8.3
    SUPERVISOR = "game supervisor"  # NZ 9.3A(b)
    RANDOM = "random selection"  # NZ 9.3A(c)


@dataclass(frozen=True)
class CutDecision:
    """The round's cut. options is None when the rule names the cut but not its options
    (the cut die, ACT's house way cut): the dealer's procedures settle Right/Left."""

    cut: Cut
    options: frozenset[CutOption] | None
    source: CutSource


def _approved(profile: Profile, approved: Collection[Cut] | None) -> list[Cut]:
    listed = [spec.cut for spec in _TABLES[profile]]
    if approved is None:
        return listed
    for cut in approved:
        cut_spec(profile, cut)
    chosen = [c for c in listed if c in set(approved)]
    if not chosen:
        raise InputError("no approved cuts to choose from")
    return chosen


def random_cut(
    profile: Profile, *, rng: Chooser, approved: Collection[Cut] | None = None
) -> CutDecision:
    """NZ 9.3A(c): a cut drawn uniformly from the approved cuts, then each option uniformly.

    `approved`: the cuts the Secretary approved for this casino (NZ "Approved Cut"), by default
    all of Appendix 5. `rng` is explicit (the pure core has no hidden input): the table passes the
    OS CSPRNG (`random.SystemRandom()`, devices/rng.py); tests pass a seeded Random.
    """
    if profile is not Profile.NZ:
        raise InputError(f"random cut selection is an NZ rule (9.3A), not profile {profile}'s")
    cut = rng.choice(_approved(profile, approved))
    options = frozenset(rng.choice(axis.value) for axis in cut_spec(profile, cut).axes)
    return CutDecision(cut, options, CutSource.RANDOM)


def decide_cut(
    profile: Profile,
    holder: BankHolder,
    *,
    nominated: tuple[Cut, Collection[CutOption]] | None = None,
    supervisor: tuple[Cut, Collection[CutOption]] | None = None,
    cut_die: int | None = None,
    approved: Collection[Cut] | None = None,
    rng: Chooser | None = None,
) -> CutDecision:
    """The round's cut under each profile's rules.

    nominated: the player/banker's choice (None: declined). supervisor: the NZ game
    supervisor's choice. cut_die: NSW's cut die reading. approved: NZ's approved subset.
    """
    player_banker = holder is not BankHolder.HOUSE
    if nominated is not None and not player_banker:
        raise InputError("only a player/banker nominates the cut; the house is banking")
    if supervisor is not None and profile is not Profile.NZ:
        raise InputError(f"a supervisor's cut is an NZ rule (9.3A(b)), not profile {profile}'s")
    if cut_die is not None and profile is not Profile.NSW:
        raise InputError(f"cut die {cut_die!r}: profile {profile} has no cut die")
    if approved is not None and profile is not Profile.NZ:
        raise InputError(f"an approved subset of cuts is an NZ rule, not profile {profile}'s")

    def chosen(choice: tuple[Cut, Collection[CutOption]], source: CutSource) -> CutDecision:
        cut, options = choice
        if cut not in _approved(profile, approved):
            raise InputError(f"cut {cut.value!r} is not approved at this table (NZ 9.3A)")
        return CutDecision(cut, check_options(profile, cut, options), source)

    if profile is Profile.NSW:
        if holder is BankHolder.CO_BANK:
            raise InputError("co-bank is not a method of play in profile nsw (NSW 11.1)")
        if nominated is not None:
            return chosen(nominated, CutSource.PLAYER_BANKER)  # NSW 8.4.3
        if cut_die is None:
            raise InputError("the cut die decides the cut (NSW 8.4.3-8.4.4): no cut die given")
        return CutDecision(cut_for_die(cut_die), None, CutSource.CUT_DIE)
    if profile is Profile.ACT:
        if nominated is not None:
            return chosen(nominated, CutSource.PLAYER_BANKER)  # ACT 8.4
        return CutDecision(HOUSE_WAY_CUT, None, CutSource.HOUSE_WAY)  # ACT 8.3
    if nominated is not None and supervisor is not None:
        raise InputError("both the player/banker and the supervisor chose a cut: only one may")
    if nominated is not None:
        return chosen(nominated, CutSource.PLAYER_BANKER)  # NZ 9.3A(a)
    if supervisor is not None:
        return chosen(supervisor, CutSource.SUPERVISOR)  # NZ 9.3A(b)
    if rng is None:
        raise InputError("no cut chosen and no random source given for the selection (NZ 9.3A(c))")
    return random_cut(profile, approved=approved, rng=rng)  # NZ 9.3A(c)
