"""The shipped example configurations, edited for a test (no tests here)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def example_config(tmp_path: Path, name: str, line: str, replacement: str) -> Path:
    """examples/`name` with `line` (which it must show) replaced, simulated devices and no
    head-office link: only what the test changes differs from what ships."""
    text = (REPO / "examples" / name).read_text()
    assert line in text, f"examples/{name} no longer shows {line!r}"
    text = text.replace(line, replacement)
    text = text.replace("simulate = false", "simulate = true").replace(
        "[link]\nenabled = true", "[link]\nenabled = false")
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path
