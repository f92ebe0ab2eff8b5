"""The pictures in docs/images/ drawn by docs/pictures.py: the committed ones are exactly what
the script draws now, so the GPIO wiring pictures cannot drift from the example configs; and a
picture shows each configured pin as the daemon's own config reader reads it."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "docs" / "images"


def load_pictures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_pictures", REPO / "docs" / "pictures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


pictures = load_pictures()


def labels(svg: str) -> list[str]:
    return [re.sub(r"&amp;", "&", t) for t in re.findall(r"<text [^>]*>([^<]*)</text>", svg)]


def test_the_committed_pictures_are_what_the_examples_give_now() -> None:
    drawn = pictures.pictures()
    # Every example with a [devices.gpio] section has its picture, and no picture outlives
    # its example.
    with_gpio = {f"gpio-{p.stem}.svg" for p in (REPO / "examples").glob("*.toml")
                 if "[devices.gpio]" in p.read_text()}
    assert {n for n in drawn if n.startswith("gpio-")} == with_gpio
    assert {p.name for p in IMAGES.glob("gpio-*.svg")} == with_gpio
    stale = [n for n, text in drawn.items() if (IMAGES / n).read_text() != text]
    assert not stale, f"run .venv/bin/python docs/pictures.py: {stale} differ from the configs"


def test_a_picture_shows_each_configured_pin(tmp_path: Path) -> None:
    example = (REPO / "examples" / "uth-nsw.toml").read_text()
    assert "void = 21" in example
    moved = tmp_path / "moved.toml"
    moved.write_text(example.replace("void = 21", "void = 26"))
    cfg = pictures.read_example(moved)
    text = labels(pictures.gpio_svg("moved", cfg))
    assert "GPIO26  keypad: void" in text and "GPIO21" in text  # 21 now free
    for i, pin in enumerate(cfg.bet_sensor, start=1):
        assert f"GPIO{pin}  bet sensor, box {i}" in text
    for i, pin in enumerate(cfg.lamp, start=1):
        assert f"GPIO{pin}  jackpot lamp, box {i}" in text
    assert f"GPIO{cfg.table_closed}  table-closed switch" in text
    # The committed picture of the example is not that of the moved pin.
    assert (IMAGES / "gpio-uth-nsw.svg").read_text() != pictures.gpio_svg("uth-nsw", cfg)


def test_a_pin_used_twice_is_refused_not_drawn(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((REPO / "examples" / "uth-nsw.toml").read_text()
                   .replace("void = 21", "void = 27"))  # table_closed's pin
    with pytest.raises(ValueError, match="GPIO27 is already used"):
        pictures.read_example(bad)
