"""Simulated Pai Gow players and dealer (docs/rounds-paigow.md, "Simulation").

`PaiGowSim.next_events(status)` answers the machine's status while it waits for people:
players wager on random boxes, sometimes take the bank or change an OFF button, the dealer calls
no more bets, delivers, sets and enters results, and now and then voids a round. It never makes
device events (dice, cut.selected): the daemon's simulated shaker and CSPRNG do that.

Delivery stands in for real tiles: the sim shuffles the 32 tiles with its own rng and hands out
consecutive groups of four as the machine announced them (`status["delivery"]`, from
`delivery.delivery_plan`), from the first box round the eight
positions (counter-clockwise, ACT clockwise per ACT 9.1). A physical cut only reorders the
stacks, which a uniform shuffle already does, so the announced cut is not replayed tile by tile.
Boxes the dealer sets the house way (NZ 7.2, status `house_way_boxes`) are entered that way.
Deterministic for a seeded rng and the same sequence of statuses.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from controller.events import Kind
from controller.games.paigow.cuts import cut_table
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import all_settings
from controller.games.paigow.tiles import FULL_SET, Tile
from controller.rounds.base import Event

Status = dict[str, Any]
RICH = 10_000_000  # cents: a banker who can cover any table


class PaiGowSim:
    """The people at one simulated table. Holds the tiles it dealt until the result."""

    def __init__(self, rng: random.Random, rules: Profile, boxes: int = 8) -> None:
        self.rng = rng
        self.rules = rules
        self.boxes = boxes
        self._dealt: dict[int, tuple[Tile, ...]] = {}
        self._dealt_round: int | None = None  # the round `_dealt` belongs to

    def next_events(self, status: Status) -> list[Event]:
        """The next events the dealer and players cause; [] while a device or the CSPRNG is due."""
        if status["awaiting"] not in ("dealer", Kind.TABLE_OPEN):
            return []
        actions: dict[str, Callable[[Status], list[Event]]] = {
            "closed": lambda s: [Event(Kind.TABLE_OPEN)],
            "betting": self._betting,
            "shaking": self._after_fault,
            "off_draw": self._after_fault,
            "announced": self._deliver,
            "setting": self._result,
        }
        action = actions.get(status["state"])
        return [] if action is None else action(status)

    # -- betting -----------------------------------------------------------------------------------

    def _betting(self, status: Status) -> list[Event]:
        off = self._off_change(status)
        if off is not None:
            return [off]
        events: list[Event] = []
        banker = status["banker"]
        bank_box, bank_player = banker["box"], banker["player"]
        player_bank = banker["holder"] != "house"
        if status["bank_offer"] and self.rng.random() < 0.35:
            take = self._take_bank(status)
            events.append(take)
            bank_box, bank_player, player_bank = take.data["box"], take.data["player"], True
        events += self._wagers(status, bank_box, bank_player)
        if player_bank and self.rng.random() < 0.5:
            events.append(self._cut("banker"))
        elif self.rules is Profile.NZ and not player_bank and self.rng.random() < 0.2:
            events.append(self._cut("supervisor"))  # NZ 9.3A(b)
        if player_bank and self.rules is not Profile.ACT and self.rng.random() < 0.3:
            values = range(-4, 5) if self.rules is Profile.NSW else (-4, 4)
            events.append(Event(Kind.DEALER_STEAL, {"value": self.rng.choice(values)}))
        events.append(Event(Kind.DEALER_NO_MORE_BETS))
        return events

    def _off_change(self, status: Status) -> Event | None:
        if status["off_boxes"] and self.rng.random() < 0.2:
            return Event(Kind.OFF_RELEASED, {"box": self.rng.choice(status["off_boxes"])})
        house = status["banker"]["holder"] == "house"
        quiet = self.rules is not Profile.ACT and house and not status["off_boxes"]
        if quiet and self.rng.random() < 0.04:
            return Event(Kind.DEALER_OFF_DRAW)
        return None

    def _take_bank(self, status: Status) -> Event:
        box = self.rng.choice(status["bank_offer"])
        holder = "player"
        if self.rules is not Profile.NSW and self.rng.random() < 0.3:
            holder = "co-bank"
        player = status["last_controllers"].get(str(box), f"p{box}")
        funds = 0 if self.rng.random() < 0.05 else RICH  # now and then one who cannot cover
        return Event(Kind.DEALER_BANK, {"box": box, "holder": holder, "player": player,
                                     "funds": funds})

    def _wagers(self, status: Status, bank_box: int, bank_player: str | None) -> list[Event]:
        boxes = [b for b in status["open_boxes"] if b != bank_box]
        if bank_box != 1 and 1 not in status["off_boxes"]:
            boxes = sorted({*boxes, 1} - {bank_box})  # box 1 takes wagers under a player bank
        if not boxes:
            return []
        table = status["table"]
        # NZ 6.12: a win less 5% must be payable in chips, so NZ players bet in pairs of minimums.
        step = table["minimum"] * (2 if self.rules is Profile.NZ else 1)
        events = []
        for _ in range(self.rng.randint(1, 5)):
            box = self.rng.choice(boxes)
            # p<box> sits at the box; q/r<box> back it; "roamer" spreads over several boxes.
            player = self.rng.choice([f"p{box}", f"p{box}", f"q{box}", f"r{box}", "roamer"])
            if player == bank_player:
                continue
            events.append(Event(Kind.DEALER_WAGER, {
                "box": box, "player": player, "amount": step * self.rng.randint(1, 5),
                "seated": player == f"p{box}",
                "card": f"SIM-{player}",  # the player's own simulated card (NSW 9.1, 16.1)
            }))
        return events

    def _cut(self, by: str) -> Event:
        spec = self.rng.choice(cut_table(self.rules))
        options = [self.rng.choice(axis.value).value for axis in spec.axes]
        return Event(Kind.DEALER_CUT, {"cut": spec.cut.value, "options": options, "by": by})

    # -- after no more bets ------------------------------------------------------------------------

    def _after_fault(self, status: Status) -> list[Event]:
        if status["state"] == "shaking" and self.rng.random() < 0.3:
            return [Event(Kind.DEALER_VOID, {"reason": "shaker out of order"})]
        return [Event(Kind.DEALER_SHAKE)]

    def _deliver(self, status: Status) -> list[Event]:
        if self.rng.random() < 0.02:
            return [Event(Kind.DEALER_VOID, {"reason": "tiles delivered to the wrong boxes"})]
        self._deal(status)
        return [Event(Kind.DEALER_DELIVERED)]

    def _deal(self, status: Status) -> None:
        tiles = list(FULL_SET)
        self.rng.shuffle(tiles)  # the cut's groups in order: group 1 = tiles[0:4]
        # The machine's announced delivery: group k to its box; missing boxes (NZ 10.2B) none.
        self._dealt = {d["box"]: tuple(tiles[4 * (d["group"] - 1): 4 * d["group"]])
                       for d in status["delivery"] if d["box"] is not None}
        self._dealt_round = status["round"]

    def _result(self, status: Status) -> list[Event]:
        if self.rng.random() < 0.01:
            return [Event(Kind.DEALER_VOID, {"reason": "incorrect distribution noticed"})]
        if self._dealt_round != status["round"]:  # restarted mid-round: tiles stand in anew
            self._deal(status)
        players: dict[int, set[str]] = {}
        for w in status["wagers"]:
            players.setdefault(w["box"], set()).add(w["player"])
        house_way = status.get("house_way_boxes") or {}  # NZ 7.2: the dealer sets these
        hands = {str(box): {"tiles": [t.notation for t in self._dealt[box]]}
                 if str(box) in house_way else self._hand(self._dealt[box], len(names) == 1)
                 for box, names in sorted(players.items())}
        banker = status["banker"]
        bank_tiles = self._dealt[banker["box"]]
        if banker["holder"] == "player" and self.rng.random() < 0.5:
            bank_hand: Any = self._own_way(bank_tiles)
        else:  # the house's hand, or a player/banker's on request, set the house way
            bank_hand = {"tiles": [t.notation for t in bank_tiles]}
        return [Event(Kind.DEALER_RESULT, {"hands": hands, "bank_hand": bank_hand})]

    def _hand(self, tiles: tuple[Tile, ...], alone: bool) -> Any:
        r = self.rng.random()
        if r < 0.03 and alone and self.rules is not Profile.ACT:
            return {"conceded": True}  # NSW 12.17, NZ 10.13
        if r < 0.5:
            return {"tiles": [t.notation for t in tiles]}  # set the house way on request
        return self._own_way(tiles)

    def _own_way(self, tiles: tuple[Tile, ...]) -> str:
        return str(self.rng.choice(all_settings(tiles)))
