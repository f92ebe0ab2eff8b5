"""The pictures in docs/images/, drawn as SVG from sources kept in the repo:

- `gpio-<example>.svg`: each example config's GPIO wiring on the Raspberry Pi's 40-pin header,
  read from examples/<example>.toml's `[devices.gpio]` by the daemon's own reader
  (devices/sensors/config.py `read_gpio`), so the picture cannot drift from the configs
  (tests/test_docs_pictures.py fails when a committed one differs from what they give);
- `dataflow.svg`: one event from a button press to head office (docs/architecture.md);
- `ab-update.svg`: the A/B update (image/README.md, `tablectl-slot`).

    .venv/bin/python docs/pictures.py   # rewrites docs/images/{gpio-*,dataflow,ab-update}.svg

Plain SVG written here, no Graphviz: the output depends on nothing but this file and the configs.
"""

from __future__ import annotations

import itertools
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from devices.sensors.config import GpioConfig, read_gpio  # noqa: E402
from shared.config_reader import Errors, Table  # noqa: E402

IMAGES = REPO / "docs" / "images"
EXAMPLES = REPO / "examples"
FONT = 13
CHAR_W = 7.2  # a sans-serif character at FONT px, wide enough not to overflow a box
INPUT, OUTPUT, POWER, GROUND, FREE = "#cfe3ff", "#ffd8a8", "#ffb3b3", "#d0d0d0", "#ffffff"
# The header's board and the pin numbers on it: a number ends PIN_GAP px from its pad's centre
# (8 px radius), all of it on the board (tests/test_docs_pictures_render.py renders each
# picture and checks every digit shows).
BOARD, PIN_TEXT, PIN_FONT, PIN_GAP, BOARD_HALF_W = "#2f6f3e", "#ffffff", 10, 14, 56

# The 40-pin header, physical pin -> what it is (BCM numbering for the GPIO lines).
HEADER: dict[int, str | int] = {
    1: "3V3", 2: "5V", 3: 2, 4: "5V", 5: 3, 6: "GND", 7: 4, 8: 14, 9: "GND", 10: 15,
    11: 17, 12: 18, 13: 27, 14: "GND", 15: 22, 16: 23, 17: "3V3", 18: 24, 19: 10, 20: "GND",
    21: 9, 22: 25, 23: 11, 24: 8, 25: "GND", 26: 7, 27: 0, 28: 1, 29: 5, 30: "GND",
    31: 6, 32: 12, 33: 13, 34: "GND", 35: 19, 36: 16, 37: 26, 38: 20, 39: "GND", 40: 21,
}


class Svg:
    """An SVG drawing: rectangles, text and arrows, written in the order drawn."""

    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height = width, height
        self.parts = [f'<rect width="{width}" height="{height}" fill="#ffffff"/>']
        self.text(width / 2, 26, title, size=16, anchor="middle", bold=True)

    def rect(self, x: float, y: float, w: float, h: float, fill: str, dashed: bool = False
             ) -> None:
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        self.parts.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="6"'
                          f' fill="{fill}" stroke="#333333"{dash}/>')

    def circle(self, x: float, y: float, r: float, fill: str) -> None:
        self.parts.append(f'<circle cx="{x:g}" cy="{y:g}" r="{r:g}" fill="{fill}"'
                          ' stroke="#333333"/>')

    def text(self, x: float, y: float, text: str, size: int = FONT, anchor: str = "start",
             bold: bool = False, mono: bool = False, color: str = "#000000") -> None:
        family = "monospace" if mono else "sans-serif"
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(f'<text x="{x:g}" y="{y:g}" font-family="{family}" font-size="{size}"'
                          f' fill="{color}" text-anchor="{anchor}"{weight}>{escape(text)}</text>')

    def arrow(self, points: list[tuple[float, float]], label: str = "",
              at: tuple[float, float] | None = None) -> None:
        path = " ".join(f"{x:g},{y:g}" for x, y in points)
        self.parts.append(f'<polyline points="{path}" fill="none" stroke="#333333"'
                          ' marker-end="url(#arrow)"/>')
        if label:
            x, y = at or ((points[0][0] + points[-1][0]) / 2 + 6,
                          (points[0][1] + points[-1][1]) / 2 + 4)
            self.text(x, y, label, size=FONT - 1)

    def render(self) -> str:
        return "\n".join([
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}"'
            f' height="{self.height}" viewBox="0 0 {self.width} {self.height}">',
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8"'
            ' markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
            *self.parts, "</svg>\n"])


@dataclass(frozen=True)
class Box:
    """A box of a flow picture: a bold first line, then plain ones."""

    x: float
    y: float
    w: float
    lines: tuple[str, ...]
    fill: str = "#f4f6f8"
    dashed: bool = False

    @property
    def h(self) -> float:
        return 12 + 18 * len(self.lines)

    def draw(self, svg: Svg) -> None:
        longest = max(len(line) for line in self.lines)
        if longest * CHAR_W > self.w - 16:
            raise ValueError(f"box too narrow for {max(self.lines, key=len)!r}")
        svg.rect(self.x, self.y, self.w, self.h, self.fill, self.dashed)
        for i, line in enumerate(self.lines):
            svg.text(self.x + 8, self.y + 22 + 18 * i, line, bold=i == 0)

    def bottom(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y + self.h)

    def top(self) -> tuple[float, float]:
        return (self.x + self.w / 2, self.y)

    def left(self) -> tuple[float, float]:
        return (self.x, self.y + self.h / 2)

    def right(self) -> tuple[float, float]:
        return (self.x + self.w, self.y + self.h / 2)


# --- the GPIO wiring ---------------------------------------------------------------------------

def wiring(cfg: GpioConfig) -> dict[int, tuple[str, str]]:
    """BCM pin -> (what is wired to it, INPUT or OUTPUT), as the sensors device uses them
    (devices/sensors/gpio.py: inputs pulled up, a lamp an LED output)."""
    uses: dict[int, tuple[str, str]] = {}
    for group, what in (("chung", "chung button"), ("off", "off button"),
                        ("bet_sensor", "bet sensor")):
        for i, pin in enumerate(getattr(cfg, group)):
            uses[pin] = (f"{what}, box {i + 1}", INPUT)
    for i, pin in enumerate(cfg.lamp):
        uses[pin] = (f"jackpot lamp, box {i + 1}", OUTPUT)
    for action, pin in cfg.keypad.items():
        uses[pin] = (f"keypad: {action}", INPUT)
    if cfg.table_closed is not None:
        uses[cfg.table_closed] = ("table-closed switch", INPUT)
    return uses


def read_example(path: Path) -> GpioConfig | None:
    """The example's `[devices.gpio]` as the daemon reads it (None: the example has none)."""
    data = tomllib.loads(path.read_text())
    section = data.get("devices", {}).get("gpio")
    if section is None:
        return None
    errors = Errors(str(path))
    cfg = read_gpio(Table(errors, "devices.gpio", section))
    if errors.lines:
        raise ValueError("; ".join(errors.lines))
    return cfg


def gpio_svg(name: str, cfg: GpioConfig) -> str:
    uses = wiring(cfg)
    row_h, top, mid = 26, 70, 470
    svg = Svg(940, top + 20 * row_h + 110,
              f"GPIO wiring of examples/{name}.toml (40-pin header, BCM numbers)")
    # The board is wide enough to hold each pin's number beside its pad: a number drawn across
    # the board's edge lost its outer digit, white on the white page (issue 28 item 6).
    svg.rect(mid - BOARD_HALF_W, top - 16, 2 * BOARD_HALF_W, 20 * row_h + 6, BOARD)
    for phys, what in HEADER.items():
        row, odd = (phys - 1) // 2, phys % 2 == 1
        y = top + row * row_h
        x = mid - 14 if odd else mid + 14
        if isinstance(what, int):
            use, fill = uses.get(what, ("", FREE))
            label = f"GPIO{what}" + (f"  {use}" if use else "")
        else:
            fill = GROUND if what == "GND" else POWER
            label = what
        svg.circle(x, y - 4, 8, fill)
        svg.text(x + (-PIN_GAP if odd else PIN_GAP), y, str(phys), size=PIN_FONT,
                 anchor="end" if odd else "start", mono=True, color=PIN_TEXT)
        lx = mid - BOARD_HALF_W - 6 if odd else mid + BOARD_HALF_W + 6
        svg.text(lx, y, label, anchor="end" if odd else "start", bold=what in uses)
    y = top + 20 * row_h + 20
    for i, (fill, text) in enumerate(
            ((INPUT, "input: pulled up on the Pi, the switch closes to GND (active low)"),
             (OUTPUT, "output: the lamp's driver, on when the pin is high"),
             (FREE, "unused GPIO"))):
        svg.circle(40, y + 22 * i - 4, 8, fill)
        svg.text(56, y + 22 * i, text)
    svg.text(40, y + 66, f"pin_factory = \"{cfg.pin_factory}\", debounce {cfg.debounce_ms} ms."
             " Generated by docs/pictures.py from the example; do not edit.", size=11)
    return svg.render()


def gpio_pictures() -> dict[str, str]:
    """File name -> SVG for every example config with a GPIO section."""
    out = {}
    for path in sorted(EXAMPLES.glob("*.toml")):
        cfg = read_example(path)
        if cfg is not None:
            out[f"gpio-{path.stem}.svg"] = gpio_svg(path.stem, cfg)
    return out


# --- the data flow of one event ----------------------------------------------------------------

def dataflow_svg() -> str:
    """docs/architecture.md "One event, from a button press to head office", step by step."""
    svg = Svg(980, 800, "One event, from a button press to head office (docs/architecture.md)")
    svg.rect(20, 44, 600, 740, "#fbfbfb", dashed=True)
    svg.text(30, 64, "the table (tablectld)", bold=True)
    svg.rect(660, 44, 300, 740, "#fbfbfb", dashed=True)
    svg.text(670, 64, "head office (tablectl-headoffice)", bold=True)
    w = 560
    steps = [
        ("1. devices/sensors/gpio.py  GpioSensors", "gpiozero thread: pin 21 released",
         "-> event dealer.void {}"),
        ("2. devices/base.py  Device._deliver", "loop.call_soon_threadsafe(emit)"),
        ("3. controller/daemon/service.py  TableService", "emit: queue Event with arrival time;",
         "consume: up to 64 at once"),
        ("4. controller/rounds/  guarded step (pure)", "UTH machine: Kind.DEALER_VOID -> void",
         "-> new state + effects (UTH 11.3)"),
        ("5. controller/journal/  Journal.append_batch", "event, effects, round record, outbox",
         "row: hashed, one fsync'd commit"),
        ("6. controller/daemon/effects.py  Effects.run", "shuffler, meter, log; then watchers"),
        ("7. controller/link/extension.py", "_watch_outbox: wake the relay"),
        ("8. controller/link/relay.py  OutboxRelay", "publish oldest unacked, bounded",
         "(shared/link: contract, transport)"),
    ]
    boxes, y = [], 80.0
    for lines in steps:
        box = Box(40, y, w, lines)
        boxes.append(box)
        y += box.h + 18
    ack = Box(40, y + 10, w, ("10. LinkExtension._on_message", "ack upto -> relay ->",
                              "Journal.ack_outbox drops the acked rows"), fill="#e8f4e8")
    worker = Box(680, boxes[-1].y - 20, 260, ("9. headoffice/worker.py", "Worker._read: parse",
                                              "(same contract, bounded);",
                                              "Ledger.apply_batch stores it",
                                              "once; publish ack upto"), fill="#e8eef8")
    for box in [*boxes, ack, worker]:
        box.draw(svg)
    for a, b in itertools.pairwise(boxes):
        svg.arrow([a.bottom(), b.top()])
    svg.arrow([boxes[-1].right(), worker.left()])
    svg.text(680, worker.y - 26, "MQTT v5, QoS 1, on", size=FONT - 1)
    svg.text(680, worker.y - 10, "tablectl/v1/table/<id>/outbox", size=10, mono=True)
    bx, by = worker.bottom()
    svg.arrow([(bx, by), (bx, ack.y + ack.h / 2), ack.right()], "ack", at=(bx + 6, by + 20))
    return svg.render()


# --- the A/B update ----------------------------------------------------------------------------

def ab_update_svg() -> str:
    """image/README.md and docs/operations.md "Update (A/B) and roll back" (tablectl-slot)."""
    svg = Svg(960, 650, "A/B update with tryboot and rollback (tablectl-slot)")
    running = Box(30, 70, 400, ("Slot A running, committed", "autoboot.txt [all]",
                                "boot_partition = A"), fill="#e8f4e8")
    install = Box(30, 190, 400, ("sudo tablectl-slot install BUNDLE", "check bundle.json.sig",
                                 "with the manifest key; write boot.vfat",
                                 "and system.ext4 to slot B;", "[tryboot] boot_partition = B"))
    tryboot = Box(30, 370, 400, ('reboot "0 tryboot"', "the firmware boots slot B once"))
    health = Box(500, 350, 430, ("tablectl-health.service", "tablectl-slot health-commit:",
                                 "in service, software verified, selftest,",
                                 "journal verify (up to 5 minutes)"))
    commit = Box(500, 70, 430, ("healthy: commit", "[all] boot_partition = B",
                                "slot B is the default; A kept intact"), fill="#e8f4e8")
    back = Box(30, 510, 400, ("unhealthy, or power lost during the try",
                              "reboot: the firmware boots", "the committed slot A again"),
               fill="#fde8e8")
    rollback = Box(690, 210, 240, ("tablectl-slot rollback", "the other slot (A) is",
                                   "the default; reboot"), fill="#fff4e0")
    for box in (running, install, tryboot, health, commit, back, rollback):
        box.draw(svg)
    svg.arrow([running.bottom(), install.top()], "update between sessions")
    svg.arrow([install.bottom(), tryboot.top()])
    svg.arrow([tryboot.right(), health.left()])
    svg.arrow([(600, health.y), (600, commit.y + commit.h)], "yes", at=(606, health.y - 30))
    rx = rollback.x + rollback.w / 2
    svg.arrow([(rx, commit.y + commit.h), (rx, rollback.y)], "later, if needed",
              at=(rx + 6, rollback.y - 20))
    svg.arrow([rollback.right(), (948, rollback.y + rollback.h / 2), (948, 50), (230, 50),
               running.top()])
    hx, hy = health.bottom()
    svg.arrow([(hx, hy), (hx, back.y + back.h / 2), back.right()], "no",
              at=(hx + 6, hy + 24))
    svg.arrow([back.left(), (14, back.y + back.h / 2), (14, running.y + running.h / 2),
               running.left()])
    svg.text(30, 632, "The journal and the configuration are on the shared data partition"
             " (/persistent): the same after either slot boots.", size=12)
    return svg.render()


def pictures() -> dict[str, str]:
    """Every picture this script draws: file name under docs/images/ -> SVG text."""
    return {**gpio_pictures(), "dataflow.svg": dataflow_svg(), "ab-update.svg": ab_update_svg()}


def main() -> int:
    for name, text in pictures().items():
        (IMAGES / name).write_text(text)
        print(f"docs/images/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
