"""In-process simulators of every device, so the daemon runs on any machine.

Each simulator implements its device interface and plays both the driver and the hardware:
commands answer with the same events the real device produces, after a configurable delay, and
the simulated players and dealer act through plain methods (`SimShuffler.dispense`,
`SimSensors.place_chung`, ...). Randomness (dice, shuffles) comes from the operating system's
CSPRNG (`secrets.SystemRandom`) unless a seeded `random.Random` is injected for reproducible
tests. Faults are injected through methods named for the fault (docs/devices.md).

All timers run on the daemon's loop (`loop.call_later`); nothing here blocks.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from controller.config import TableConfig
from controller.games.paigow.profiles import Profile
from devices.base import Device, DeviceError, State
from devices.meter import Meter, MeterView
from devices.sensors import Sensors
from devices.shaker import BOX_DICE, DiceShaker
from devices.shuffler import STANDARD_DECK, Shuffler, check_deck

UNREADABLE = None  # a card the reader cannot identify, in a simulated deck's contents


def default_rng() -> random.Random:
    """The CSPRNG every simulator uses unless told otherwise."""
    return secrets.SystemRandom()


class _Timers:
    """Delayed answers on the device's loop, cancelled when the device stops."""

    def __init__(self) -> None:
        self._handles: set[asyncio.Handle] = set()

    def later(self, delay: float, fn: Callable[..., object], *args: Any) -> None:
        loop = asyncio.get_running_loop()
        handle: asyncio.Handle

        def run() -> None:
            self._handles.discard(handle)
            fn(*args)

        handle = loop.call_later(delay, run) if delay > 0 else loop.call_soon(run)
        self._handles.add(handle)

    def cancel(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._handles.clear()


# --- dice shaker --------------------------------------------------------------------------------


class SimShaker(DiceShaker):
    """Fault injection: `not_flat_probability` (each shake), `not_flat_next()`,
    `fail_next(reason)` (e.g. "cover open", "motor fault"), `no_answer = True` (the shake is
    never answered; after `answer_timeout_s` the driver side reports shaker.fault "no answer")."""

    def __init__(
        self,
        name: str = "shaker",
        *,
        cut_die: bool = False,
        rng: random.Random | None = None,
        not_flat_probability: float = 0.0,
        shake_time_s: float = 0.0,
        answer_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(name, cut_die=cut_die)
        if not 0.0 <= not_flat_probability <= 1.0:
            raise DeviceError(f"{name}: not_flat_probability must be within 0..1")
        self.rng = rng if rng is not None else default_rng()
        self.not_flat_probability = not_flat_probability
        self.shake_time_s = shake_time_s
        self.answer_timeout_s = answer_timeout_s
        self.no_answer = False
        self._not_flat_next = 0
        self._fail_next: list[str] = []
        self._timers = _Timers()

    def not_flat_next(self, times: int = 1) -> None:
        self._not_flat_next += times

    def fail_next(self, reason: str = "motor fault") -> None:
        self._fail_next.append(reason)

    async def _close(self) -> None:
        self._timers.cancel()

    def _timed_out(self) -> None:
        self._report_fault("no answer", offline=True)

    def _roll(self) -> tuple[list[int], int | None]:
        dice = [self.rng.randint(1, 6) for _ in range(BOX_DICE)]
        return dice, self.rng.randint(1, 6) if self.cut_die else None

    async def shake(self) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        self._timers.later(self.shake_time_s, self._answer)

    def _answer(self) -> None:
        self._seen()
        if self._fail_next:
            self._report_fault(self._fail_next.pop(0))
            return
        # Only consult the rng for tilts when they can happen, so a seeded run's dice do not
        # depend on whether fault injection is configured.
        if self._not_flat_next or (
            self.not_flat_probability and self.rng.random() < self.not_flat_probability
        ):
            self._not_flat_next = max(0, self._not_flat_next - 1)
            self._report_not_flat()
            return
        self._report_result(*self._roll())

    async def selftest(self) -> dict[str, Any]:
        if self.no_answer:
            return {"ok": False, "error": "no answer"}
        dice, cut = self._roll()
        return {"ok": True, "box_dice": dice, "cut_die": cut}


# --- shuffler -----------------------------------------------------------------------------------


class SimShuffler(Shuffler):
    """A card-reading shuffler with one or two decks (rule 4.2).

    Deck faults change a deck's physical contents and take effect at its next shuffle (a
    deck check sees them at once): `inject_missing`, `inject_foreign`, `inject_duplicate`,
    `inject_unreadable`; `restore_deck` puts back a clean deck. Machine faults:
    `fail_next("jam"|"fault", at="shuffle"|"dispense")`, and `no_answer = True` (commands are
    never answered; after `answer_timeout_s` shuffler.fault "no answer").
    """

    def __init__(
        self,
        name: str = "shuffler",
        *,
        decks: int = 1,
        rng: random.Random | None = None,
        shuffle_time_s: float = 0.0,
        answer_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(name, decks=decks)
        self.rng = rng if rng is not None else default_rng()
        self.shuffle_time_s = shuffle_time_s
        self.answer_timeout_s = answer_timeout_s
        self.no_answer = False
        self.contents: dict[int, list[str | None]] = {
            d: list(STANDARD_DECK) for d in range(1, decks + 1)
        }
        self._order: list[str | None] = []  # the shuffled deck in play
        self._next_index = 0
        self._pending: list[tuple[str, str, str]] = []  # (kind, at, reason)
        self._stacked: list[list[str]] = []  # test decks: cards first out, in order
        self._timers = _Timers()

    # --- fault injection ------------------------------------------------------------------------

    def _deck(self, deck: int | None) -> list[str | None]:
        d = deck if deck is not None else (self.deck_in_play or self.next_deck())
        if d not in self.contents:
            raise DeviceError(f"{self.name}: no deck {d!r} (decks: 1..{self.decks})")
        return self.contents[d]

    def inject_missing(self, card: str | None = None, deck: int | None = None) -> str:
        cards = self._deck(deck)
        present = [c for c in cards if c is not None]
        if card is None:
            card = self.rng.choice(present)
        if card not in cards:
            raise DeviceError(f"{self.name}: card {card!r} is not in the deck")
        cards.remove(card)
        return card

    def inject_foreign(self, card: str = "Jk", deck: int | None = None) -> str:
        """Add a card that does not belong (default a joker)."""
        self._deck(deck).append(card)
        return card

    def inject_duplicate(self, card: str | None = None, deck: int | None = None) -> str:
        """Add a second copy of a card (a card from another deck with the same face)."""
        cards = self._deck(deck)
        if card is None:
            card = self.rng.choice([c for c in cards if c is not None])
        cards.append(card)
        return card

    def inject_unreadable(self, deck: int | None = None) -> None:
        """Replace a random card with one the reader cannot identify."""
        cards = self._deck(deck)
        cards[self.rng.randrange(len(cards))] = UNREADABLE

    def restore_deck(self, deck: int | None = None) -> None:
        cards = self._deck(deck)
        cards[:] = STANDARD_DECK

    def stack_next(self, top: Sequence[str]) -> None:
        """Tests: the next shuffle puts these cards first, in this order (the rest shuffled as
        usual), e.g. to force a jackpot hit (controller/sim/uth.py `royal_flush_top`). Only a
        test calls it; the shuffle itself stays the CSPRNG's."""
        if len(set(top)) != len(top):
            raise DeviceError(f"{self.name}: stacked cards repeat: {list(top)}")
        self._stacked.append(list(top))

    def fail_next(self, kind: str = "jam", *, at: str = "shuffle", reason: str = "") -> None:
        if kind not in ("jam", "fault") or at not in ("shuffle", "dispense"):
            raise DeviceError(f"{self.name}: cannot inject {kind!r} at {at!r}")
        self._pending.append((kind, at, reason or ("card jam" if kind == "jam" else "malfunction")))

    def _timed_out(self) -> None:
        self._report_fault("no answer", offline=True)

    def _take_fault(self, at: str) -> bool:
        for i, (kind, where, reason) in enumerate(self._pending):
            if where == at:
                del self._pending[i]
                (self._report_jam if kind == "jam" else self._report_fault)(reason)
                return True
        return False

    # --- commands -------------------------------------------------------------------------------

    async def _close(self) -> None:
        self._timers.cancel()

    async def shuffle(self, deck: int) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        self._timers.later(self.shuffle_time_s, self._shuffled, deck)

    def _shuffled(self, deck: int) -> None:
        self._seen()
        if self._take_fault("shuffle"):
            return
        order = list(self.contents[deck])
        self.rng.shuffle(order)
        if self._stacked:
            top = self._stacked.pop(0)
            order = [*top, *(c for c in order if c not in top)]
        self._order = order
        self._next_index = 0
        self._report_ready(deck)

    async def deck_check(self, deck: int) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        self._seen()
        self._report_check(check_deck(self.contents[deck], deck))

    async def dispense_cards(self, count: int) -> None:
        for _ in range(count):
            if self.dispense() is None or self.state != State.READY:
                return  # a fault ends the deal; the round machine decides (12.2)

    def dispense(self) -> str | None:
        """The simulated dealer takes the next card: card.dispensed (or a fault) follows.

        Returns the card token, None when nothing came out.
        """
        if not self.started:
            raise DeviceError(f"{self.name}: not started")
        if self.deck_in_play is None or self.state != State.READY:
            raise DeviceError(f"{self.name}: no shuffled deck ready to dispense ({self.state})")
        if self.no_answer:
            self.state = State.BUSY
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return None
        if self._take_fault("dispense"):
            return None
        if self._next_index >= len(self._order):
            self._report_fault("deck exhausted")
            return None
        index = self._next_index
        card = self._order[index]
        self._next_index += 1
        self._seen()
        if card is None:
            self.counters["unreadable"] += 1
            self._report_fault(f"unreadable card at index {index}")
            return None
        self._report_card(card, index)
        return card

    @property
    def remaining(self) -> int:
        return len(self._order) - self._next_index

    async def selftest(self) -> dict[str, Any]:
        if self.no_answer:
            return {"ok": False, "error": "no answer"}
        result = check_deck(self._deck(None), self.deck_in_play or self.next_deck())
        return {"ok": result.ok, "deck_check": result.as_json()}


# --- GPIO sensors -------------------------------------------------------------------------------


class SimSensors(Sensors):
    """The simulated players and dealer touch the table through these methods; each emits the
    event the GPIO driver would. Lamps are recorded in `lamps` and `lamp_history`."""

    def __init__(
        self, name: str = "sensors", *, boxes: int, keypad: Iterable[str] | None = None
    ) -> None:
        super().__init__(name, boxes=boxes, keypad=keypad)
        self.lamps: dict[int, str] = dict.fromkeys(range(1, boxes + 1), "idle")
        self.lamp_history: list[tuple[int, str]] = []
        self._chung_box: int | None = None

    def _require_started(self) -> None:
        if not self.started:
            raise DeviceError(f"{self.name}: not started")

    def place_chung(self, box: int) -> None:
        """The chung is one physical marker: placing it on a box lifts it from the previous."""
        self._require_started()
        self.check_box(box)
        if self._chung_box == box:
            return
        if self._chung_box is not None:
            self._input("chung.off", {"box": self._chung_box})
        self._chung_box = box
        self._input("chung.on", {"box": box})

    def remove_chung(self) -> None:
        self._require_started()
        if self._chung_box is not None:
            self._input("chung.off", {"box": self._chung_box})
            self._chung_box = None

    def press_off(self, box: int) -> None:
        """The OFF button latches: the box stays out of play until `release_off`."""
        self._require_started()
        self._input("off.pressed", {"box": self.check_box(box)})

    def release_off(self, box: int) -> None:
        self._require_started()
        self._input("off.released", {"box": self.check_box(box)})

    def bet(self, box: int, on: bool = True) -> None:
        self._require_started()
        self._input("bet.on" if on else "bet.off", {"box": self.check_box(box)})

    def press_key(self, action: str, /, **data: Any) -> None:
        self._require_started()
        self._input(f"dealer.{self.check_action(action)}", data)

    def key_switch(self, open: bool) -> None:
        self._require_started()
        self._input("table.open" if open else "table.close", {})

    async def set_lamp(self, box: int | None, state: str) -> None:
        for b in [box] if box is not None else list(self.lamps):
            self.lamps[b] = state
            self.lamp_history.append((b, state))
        self.counters["lamp_writes"] += 1

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True, "inputs": self.inputs(), "lamps": dict(self.lamps)}


# --- meter --------------------------------------------------------------------------------------


class SimMeter(Meter):
    """Records every view it shows: `shown` (texts, in order), `views`, `text` (current)."""

    def __init__(self, name: str = "meter") -> None:
        super().__init__(name)
        self.shown: list[str] = []
        self.views: list[MeterView] = []

    @property
    def text(self) -> str:
        return self.view.text if self.view else ""

    async def _show(self, view: MeterView) -> None:
        self._seen()
        self.views.append(view)
        self.shown.append(view.text)

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True, "text": self.text}


# --- the whole table ----------------------------------------------------------------------------


def build_simulators(cfg: TableConfig, rng: random.Random | None = None) -> dict[str, Device]:
    """The simulated devices a configured table uses, keyed by device name.

    `rng` (tests, reproducible demos) is shared by the shaker and the shuffler; by default each
    uses the CSPRNG.
    """
    # The simulated keypad has every button: the simulated dealer and `tablectl dealer` may use
    # any action, wired on the real table or not.
    devices: list[Device] = [SimSensors(boxes=cfg.boxes), SimMeter()]
    if cfg.paigow is not None:
        devices.append(SimShaker(cut_die=cfg.paigow.rules is Profile.NSW, rng=rng))
    if cfg.uth is not None and cfg.uth.deal_method == "shuffler":
        devices.append(SimShuffler(decks=cfg.uth.decks, rng=rng))
    return {d.name: d for d in devices}
