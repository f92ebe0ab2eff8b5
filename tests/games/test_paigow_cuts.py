"""Cuts: traditional cuts per profile (NSW App. 3, NZ App. 5, ACT 3.8 and App. E), NSW App. 4 cut
die, ACT 8.3 house way cut, NZ 9.3A selection including random."""

from __future__ import annotations

import random
import secrets

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow import cuts
from controller.games.paigow.bank import BankHolder
from controller.games.paigow.cuts import (
    Axis,
    Cut,
    CutOption,
    CutSource,
    check_options,
    cut_for_die,
    cut_spec,
    cut_table,
    decide_cut,
    option_sets,
    parse_cut,
    parse_cut_choice,
    random_cut,
)
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

R, L, T, B = CutOption.RIGHT, CutOption.LEFT, CutOption.TOP, CutOption.BOTTOM

# --- the tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
def test_each_profile_lists_twenty_distinct_cuts(profile: Profile) -> None:
    """NSW Appendix 3, NZ Appendix 5 and ACT Appendix E each list 20 cuts."""
    table = cut_table(profile)
    assert len(table) == 20
    assert len({s.cut for s in table}) == 20


def test_profiles_differ_in_which_cuts_they_list() -> None:
    """Sydney Tower: NSW App. 3 and ACT App. E only; Girl on the Right and Left: NZ App. 5 only."""
    listed = {p: {s.cut for s in cut_table(p)} for p in Profile}
    assert Cut.SYDNEY_TOWER in listed[Profile.NSW] & listed[Profile.ACT]
    assert Cut.SYDNEY_TOWER not in listed[Profile.NZ]
    assert Cut.GIRL_RIGHT_AND_LEFT in listed[Profile.NZ]
    assert Cut.GIRL_RIGHT_AND_LEFT not in listed[Profile.NSW] | listed[Profile.ACT]


@pytest.mark.parametrize(
    ("profile", "cut", "axes"),
    [
        (Profile.NSW, Cut.CUP_SAY, {Axis.SIDE, Axis.LEVEL}),  # (Right or Left, Top or Bottom)
        (Profile.NSW, Cut.CHONG_WAN_SUP_LOK, set()),  # NSW prints no options
        (Profile.NZ, Cut.CHONG_WAN_SUP_LOK, {Axis.LEVEL}),
        (Profile.NSW, Cut.GUM_UN_QUE, {Axis.SIDE}),  # "(Right or Left Front to Back)"
        (Profile.NZ, Cut.GUM_UN_QUE, {Axis.SIDE, Axis.DEPTH}),  # (Right or Left)(Front or Back)
        (Profile.ACT, Cut.GUM_UN_QUE, set()),
        (Profile.ACT, Cut.LONG_TAU_FONG_MAY, {Axis.END, Axis.SIDE}),  # Head or Tail, Left or Right
        (Profile.NSW, Cut.LONG_TAU_FONG_MAY, {Axis.SIDE}),
        (Profile.NZ, Cut.ARN_LOK_PENG_SAR, {Axis.SIDE, Axis.END}),
        (Profile.NSW, Cut.YAT_KAI_SUM_MAY, set()),
        (Profile.ACT, Cut.YAT_KAI_SUM_MAY, {Axis.SIDE}),
    ],
)
def test_options_follow_each_appendix(profile: Profile, cut: Cut, axes: set[Axis]) -> None:
    assert set(cut_spec(profile, cut).axes) == axes
    assert len(option_sets(profile, cut)) == 2 ** len(axes)


def test_english_names_per_profile() -> None:
    assert cut_spec(Profile.NSW, Cut.YAT_DONG_DONG).english == "One Stack"
    assert cut_spec(Profile.ACT, Cut.YAT_DONG_DONG).english == "House Way"
    assert cut_spec(Profile.ACT, Cut.DAI_PIN).traditional == "Die Pin"


# --- NSW Appendix 4 and ACT 8.3 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("face", "cut"),
    [
        (1, Cut.LONG_TAU_FONG_MAY),
        (2, Cut.JUNG_QUAT),
        (3, Cut.CUP_SAY),
        (4, Cut.DAI_PIN),
        (5, Cut.WUI_FUNG_BANK),
        (6, Cut.CHEE_YEE),
    ],
)
def test_cut_die_nsw_appendix_4(face: int, cut: Cut) -> None:
    assert cut_for_die(face) is cut
    decision = decide_cut(Profile.NSW, BankHolder.HOUSE, cut_die=face)
    assert (decision.cut, decision.source) == (cut, CutSource.CUT_DIE)
    assert decision.options is None  # NSW Appendix 4 names the cut, not Right/Left


@pytest.mark.parametrize("face", [0, 7, True])
def test_cut_die_outside_one_to_six(face: int) -> None:
    with pytest.raises(InputError, match=f"cut die reads {face!r}"):
        cut_for_die(face)


def test_every_cut_die_cut_is_an_nsw_traditional_cut() -> None:
    for face in range(1, 7):
        cut_spec(Profile.NSW, cut_for_die(face))


def test_nsw_house_banks_cut_die_decides_nsw_8_4_4() -> None:
    # NSW 8.4.4
    with pytest.raises(InputError, match="cut die"):
        decide_cut(Profile.NSW, BankHolder.HOUSE)
    with pytest.raises(InputError, match="house is banking"):
        decide_cut(Profile.NSW, BankHolder.HOUSE, nominated=(Cut.FOOT_SAY, ()), cut_die=1)


def test_nsw_player_banker_nominates_or_cut_die_decides_nsw_8_4_3() -> None:
    chosen = decide_cut(Profile.NSW, BankHolder.PLAYER, nominated=(Cut.CUP_SAY, {L, B}), cut_die=6)
    assert (chosen.cut, chosen.options, chosen.source) == (
        Cut.CUP_SAY,
        frozenset({L, B}),
        CutSource.PLAYER_BANKER,
    )
    declined = decide_cut(Profile.NSW, BankHolder.PLAYER, cut_die=6)
    assert (declined.cut, declined.source) == (Cut.CHEE_YEE, CutSource.CUT_DIE)


def test_nsw_has_no_co_bank_nor_supervisor_cut_nsw_11_1() -> None:
    with pytest.raises(InputError, match=r"11\.1"):
        decide_cut(Profile.NSW, BankHolder.CO_BANK, cut_die=1)
    with pytest.raises(InputError, match="supervisor"):
        decide_cut(Profile.NSW, BankHolder.HOUSE, supervisor=(Cut.FOOT_SAY, ()), cut_die=1)


def test_act_house_uses_yat_dong_dong_act_8_3() -> None:
    decision = decide_cut(Profile.ACT, BankHolder.HOUSE)
    assert (decision.cut, decision.source) == (Cut.YAT_DONG_DONG, CutSource.HOUSE_WAY)


@pytest.mark.parametrize("holder", [BankHolder.PLAYER, BankHolder.CO_BANK])
def test_act_player_or_co_banker_chooses_a_cut_act_8_4(holder: BankHolder) -> None:
    # ACT 8.4
    decision = decide_cut(Profile.ACT, holder, nominated=(Cut.SYDNEY_TOWER, ()))
    assert (decision.cut, decision.source) == (Cut.SYDNEY_TOWER, CutSource.PLAYER_BANKER)
    assert decide_cut(Profile.ACT, holder).cut is Cut.YAT_DONG_DONG  # declined: house way cut
    with pytest.raises(InputError, match="Girl"):
        decide_cut(Profile.ACT, holder, nominated=(Cut.GIRL_RIGHT_AND_LEFT, ()))


def test_act_has_no_cut_die() -> None:
    with pytest.raises(InputError, match="no cut die"):
        decide_cut(Profile.ACT, BankHolder.HOUSE, cut_die=3)


# --- NZ 9.3A -------------------------------------------------------------------------------------


def test_nz_player_banker_then_supervisor_then_random_nz_9_3a() -> None:
    rng = random.Random(1)
    by_player = decide_cut(Profile.NZ, BankHolder.CO_BANK, nominated=(Cut.FOOT_SAY, ()))
    assert by_player.source is CutSource.PLAYER_BANKER
    by_supervisor = decide_cut(Profile.NZ, BankHolder.HOUSE, supervisor=(Cut.DAI_PIN, {R}))
    assert (by_supervisor.cut, by_supervisor.source) == (Cut.DAI_PIN, CutSource.SUPERVISOR)
    drawn = decide_cut(Profile.NZ, BankHolder.HOUSE, rng=rng)
    assert drawn.source is CutSource.RANDOM
    assert drawn.options == check_options(Profile.NZ, drawn.cut, drawn.options or ())


def test_nz_house_bank_cannot_have_a_player_nomination_nz_9_3a_a() -> None:
    with pytest.raises(InputError, match="only a player/banker"):
        decide_cut(Profile.NZ, BankHolder.HOUSE, nominated=(Cut.FOOT_SAY, ()))


def test_nz_approved_subset_limits_every_source() -> None:
    """NZ "Approved Cut": named in Appendix 5 and approved for use in the casino."""
    approved = {Cut.FOOT_SAY, Cut.CHINA_BANK}
    with pytest.raises(InputError, match="not approved"):
        decide_cut(Profile.NZ, BankHolder.PLAYER, nominated=(Cut.DAI_PIN, {L}), approved=approved)
    rng = random.Random(7)
    drawn = {random_cut(Profile.NZ, approved=approved, rng=rng).cut for _ in range(200)}
    assert drawn == approved
    with pytest.raises(InputError, match="Sydney Tower"):
        random_cut(Profile.NZ, approved={Cut.SYDNEY_TOWER}, rng=rng)


def test_random_selection_can_return_every_approved_cut_and_option() -> None:
    """NZ 9.3A(c): every approved cut with every option set is reachable."""
    rng = random.Random(2024)
    seen = set()
    for _ in range(5000):
        d = random_cut(Profile.NZ, rng=rng)
        seen.add((d.cut, d.options))
    expected = {
        (spec.cut, opts)
        for spec in cut_table(Profile.NZ)
        for opts in option_sets(Profile.NZ, spec.cut)
    }
    assert seen == expected


def test_random_selection_is_deterministic_for_a_seeded_source() -> None:
    a = [random_cut(Profile.NZ, rng=random.Random(5)) for _ in range(3)]
    r1, r2 = random.Random(99), random.Random(99)
    assert [random_cut(Profile.NZ, rng=r1) for _ in range(20)] == [
        random_cut(Profile.NZ, rng=r2) for _ in range(20)
    ]
    assert a[0] == a[1] == a[2]


def test_the_random_source_is_explicit() -> None:
    # The pure core has no hidden input: no module-level generator, the caller passes one.
    assert not any(isinstance(v, random.Random) for v in vars(cuts).values())
    with pytest.raises(TypeError):
        random_cut(Profile.NZ)  # type: ignore[call-arg]
    with pytest.raises(InputError, match=r"9\.3A\(c\)"):
        cuts.decide_cut(Profile.NZ, BankHolder.HOUSE)
    # The table's caller passes the OS CSPRNG: seeding the `random` module must not repeat it.
    osrng = secrets.SystemRandom()
    random.seed(0)
    first = [random_cut(Profile.NZ, rng=osrng) for _ in range(30)]
    random.seed(0)
    second = [random_cut(Profile.NZ, rng=osrng) for _ in range(30)]
    assert first != second


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.ACT])
def test_random_selection_is_nz_only(profile: Profile) -> None:
    with pytest.raises(InputError, match=r"9\.3A"):
        random_cut(profile, rng=random.Random(0))


@given(st.integers(0, 2**32))
def test_random_cut_is_always_a_valid_choice(seed: int) -> None:
    d = random_cut(Profile.NZ, rng=random.Random(seed))
    assert d.options is not None
    assert check_options(Profile.NZ, d.cut, d.options) == d.options


# --- options and parsing -------------------------------------------------------------------------


def test_options_must_pick_exactly_one_per_axis() -> None:
    assert check_options(Profile.NSW, Cut.CUP_SAY, [R, T]) == {R, T}
    with pytest.raises(InputError, match="exactly one of top or bottom"):
        check_options(Profile.NSW, Cut.CUP_SAY, [R])
    with pytest.raises(InputError, match="exactly one of right or left"):
        check_options(Profile.NSW, Cut.CUP_SAY, [R, L, T])
    with pytest.raises(InputError, match="'top' does not apply"):
        check_options(Profile.NSW, Cut.DAI_PIN, [L, T])
    assert check_options(Profile.NSW, Cut.FOOT_SAY, []) == frozenset()


@pytest.mark.parametrize(
    ("profile", "text", "cut"),
    [
        (Profile.NSW, "yat dong dong", Cut.YAT_DONG_DONG),
        (Profile.NSW, "ONE STACK", Cut.YAT_DONG_DONG),
        (Profile.NZ, "1 stack", Cut.YAT_DONG_DONG),
        (Profile.NZ, "one stack", Cut.YAT_DONG_DONG),  # another profile's spelling
        (Profile.NSW, "Die Pin", Cut.DAI_PIN),
        (Profile.NSW, "Buddha's Signal", Cut.PONG_YUN),
        (Profile.NZ, "buddhas signal", Cut.PONG_YUN),
        (Profile.ACT, "Long Tau Fung May", Cut.LONG_TAU_FONG_MAY),
        (Profile.NSW, "dragon head / phoenix tail", Cut.LONG_TAU_FONG_MAY),
        (Profile.NSW, "Hong Kong Bank", Cut.WUI_FUNG_BANK),
        (Profile.ACT, "sydney bridge", Cut.HARBOUR_BRIDGE),
        (Profile.NSW, "  Sydney   Harbour Bridge ", Cut.HARBOUR_BRIDGE),
        (Profile.NZ, "ghost_closing_the_door", Cut.SEUNG_GWAI_PAK_MOON),
    ],
)
def test_parse_cut_traditional_or_english_case_insensitive(
    profile: Profile, text: str, cut: Cut
) -> None:
    assert parse_cut(profile, text) is cut


@pytest.mark.parametrize(
    ("profile", "text"),
    [(Profile.NZ, "Sydney Tower"), (Profile.NSW, "girl on the right and left")],
)
def test_parse_cut_not_listed_by_the_profile_is_refused_naming_it(
    profile: Profile, text: str
) -> None:
    with pytest.raises(InputError, match=f"(?i){text}"):
        parse_cut(profile, text)


def test_parse_unknown_cut_names_the_text() -> None:
    with pytest.raises(InputError, match="'Opera House'"):
        parse_cut(Profile.NSW, "Opera House")


def test_parse_cut_choice_with_options() -> None:
    assert parse_cut_choice(Profile.NSW, "cup say right top") == (Cut.CUP_SAY, {R, T})
    assert parse_cut_choice(Profile.NSW, "Tiger (Left, Bottom)") == (Cut.CUP_SAY, {L, B})
    assert parse_cut_choice(Profile.NZ, "china bank") == (Cut.CHINA_BANK, frozenset())
    with pytest.raises(InputError, match="'sideways'"):
        parse_cut_choice(Profile.NSW, "dai pin sideways")
    with pytest.raises(InputError, match="exactly one"):
        parse_cut_choice(Profile.NSW, "dai pin")
    with pytest.raises(InputError, match="repeated"):
        parse_cut_choice(Profile.NSW, "dai pin left left")


@pytest.mark.parametrize("profile", list(Profile))
def test_every_listed_name_parses_back_to_its_cut(profile: Profile) -> None:
    for spec in cut_table(profile):
        assert parse_cut(profile, spec.traditional) is spec.cut
        assert parse_cut(profile, spec.english) is spec.cut
        for opts in option_sets(profile, spec.cut):
            text = " ".join([spec.english, *sorted(opts)])
            assert parse_cut_choice(profile, text) == (spec.cut, opts)
