"""The Player Card reader (issue 29): a reader at each box (or one at the dealer's position,
which names the box), reporting cards inserted and removed. No command plays a round: a card read
is the table's `dealer.player_card`, which the round machine checks with head office.

Events:   cardreader.read {box, card}        a card read (its opaque id only, never a name)
          cardreader.unreadable {box}        a card inserted that could not be read
          cardreader.removed {box}           the card taken out
          cardreader.fault {reason}          the reader failed or its port went
"""

from devices.cardreader.config import SECTION
from devices.cardreader.interface import CARD_ID, CardReader
from devices.kind import DeviceKind, Part, box_count, drawn

__all__ = ["CARD_ID", "DEVICE", "CardReader"]


# No in-process simulator: a simulated table without a reader keys cards
# (`dealer.player_card`); with `--simulate=pty` a configured reader gets its wire simulator.
DEVICE = DeviceKind(
    name="cardreader",
    section=SECTION,
    interface=CardReader,
    driver=Part("devices.cardreader.driver:SerialCardReader", box_count),
    sim=None,
    wire_sim=Part("devices.cardreader.wire:PtyCardReaderSim", drawn()),
    events=CardReader.EVENTS,
    order=4,
    section_order=3,
    optional=True,
)
