"""Hypothesis strategies shared by the Pai Gow tests."""

from __future__ import annotations

from hypothesis import strategies as st

from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import FULL_SET, Tile


def deals(n_hands: int) -> st.SearchStrategy[list[tuple[Tile, ...]]]:
    """n_hands four-tile hands dealt from one set, as physical tiles without replacement."""
    return st.permutations(range(len(FULL_SET))).map(
        lambda order: [
            tuple(FULL_SET[i] for i in order[4 * h : 4 * h + 4]) for h in range(n_hands)
        ]
    )


@st.composite
def dealt_settings(draw: st.DrawFn, n_hands: int = 2) -> list[Setting]:
    """Hands dealt from one set, each set in one of its legal ways."""
    hands = draw(deals(n_hands))
    return [draw(st.sampled_from(all_settings(h))) for h in hands]
