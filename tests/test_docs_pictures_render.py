"""The GPIO wiring pictures as a technician sees them: each committed docs/images/gpio-*.svg
rendered by a real browser (Debian's chromium, headless, through Selenium) and every digit of
every pin number checked to show (issue 28 item 6: white numbers drawn across the board's
edge lost their outer digit on the white page, "11" read as "1").

How: the picture is rendered twice, as committed and with the pin numbers taken out. Where a
digit is drawn, the two renders differ; a digit whose colour is its background's changes
nothing. Each digit's cell (the monospace advance, 0.6 em, from the text's anchor) must hold
pixels that differ clearly (a colour distance over CONTRAST) between the two.

The full renders are saved as PNG; with TABLECTL_GPIO_SCREENSHOTS=DIR they are kept there
(docs/images/gpio-*.png were made so: TABLECTL_GPIO_SCREENSHOTS=docs/images).
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.png import Image, read_png
from tests.test_headoffice_console_browser import CHROMIUM, DRIVER, chrome  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "docs" / "images"
pytestmark = pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                                reason="Debian's chromium and chromium-driver are not installed")
# A pin number: monospace, size 10, only digits (docs/pictures.py gpio_svg).
PIN = re.compile(r'<text x="([\d.]+)" y="([\d.]+)" font-family="monospace" font-size="10"'
                 r' fill="(#[0-9a-f]{6})" text-anchor="(start|end)">(\d+)</text>')
CONTRAST = 120  # the sum of |dr| + |dg| + |db|: white on the board's green is ~400
PIXELS = 3  # per digit, at least this many pixels must change clearly


def render(driver: Any, svg: Path, size: tuple[int, int], clip: tuple[int, int, int, int],
           keep: Path | None = None) -> Image:
    """The picture at 1:1 in the browser; the `clip` (x, y, w, h) decoded, the whole kept."""
    width, height = size
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    driver.get(svg.as_uri())
    if keep is not None:
        assert driver.save_screenshot(str(keep)) and keep.stat().st_size > 10_000
    x, y, w, h = clip
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "clip": {"x": x, "y": y, "width": w, "height": h, "scale": 1}})
    out = svg.with_suffix(".clip.png")
    out.write_bytes(base64.b64decode(shot["data"]))
    return read_png(out)


def far(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return sum(abs(p - q) for p, q in zip(a, b, strict=True)) > CONTRAST


@pytest.mark.parametrize("name", sorted(p.name for p in IMAGES.glob("gpio-*.svg")))
def test_every_pin_number_shows_on_its_background(name: str, chrome: Any,  # noqa: F811
                                                  tmp_path: Path) -> None:
    text = (IMAGES / name).read_text()
    m = re.search(r'<svg [^>]*width="(\d+)" height="(\d+)"', text)
    assert m
    size = (int(m[1]), int(m[2]))
    pins = [(float(x), float(y), anchor, digits) for x, y, _, anchor, digits in PIN.findall(text)]
    assert sorted(int(d) for *_, d in pins) == list(range(1, 41))  # the whole header
    # The digits' cells: 0.6 em a character, from the anchor; the glyphs sit above the
    # baseline (8 px of a 10 px font) with 2 px to spare on each side.
    cells = []
    for x, y, anchor, digits in pins:
        start = x - 6 * len(digits) if anchor == "end" else x
        for i in range(len(digits)):
            cells.append((f"pin {digits}, digit {i + 1}", int(start + 6 * i), int(y) - 9))
    left = min(c[1] for c in cells) - 2
    top = min(c[2] for c in cells) - 2
    right = max(c[1] for c in cells) + 8
    bottom = max(c[2] for c in cells) + 12
    clip = (left, top, right - left, bottom - top)

    shots = Path(os.environ.get("TABLECTL_GPIO_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    (tmp_path / "with.svg").write_text(text)
    (tmp_path / "without.svg").write_text(PIN.sub("", text))
    drawn = render(chrome, tmp_path / "with.svg", size, clip,
                   keep=shots / name.replace(".svg", ".png"))
    bare = render(chrome, tmp_path / "without.svg", size, clip)

    hidden = []
    for what, cx, cy in cells:
        changed = sum(far(drawn.pixel(px - left, py - top), bare.pixel(px - left, py - top))
                      for px in range(cx, cx + 6) for py in range(cy, cy + 11))
        if changed < PIXELS:
            hidden.append(what)
    assert hidden == [], f"{name}: these digits do not show against their background: {hidden}"
