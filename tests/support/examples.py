"""The shipped example configurations, edited for a test (no tests here)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def example_config(tmp_path: Path, name: str, line: str, replacement: str) -> Path:
    """examples/`name` with `line` (which it must show) replaced, simulated devices and no
    head-office link: only what the test changes differs from what ships. The tests of other
    options play uncarded (`[cards] required = false`: carded play is tests/**/test_*card*)."""
    text = (REPO / "examples" / name).read_text()
    assert line in text, f"examples/{name} no longer shows {line!r}"
    text = text.replace(line, replacement)
    text = text.replace("simulate = false", "simulate = true").replace(
        "[link]\nenabled = true", "[link]\nenabled = false")
    if "[cards]" not in text:
        text += "\n[cards]\nrequired = false\n"
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path
