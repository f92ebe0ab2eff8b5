"""The image keeps the journal's second high-water mark outside the state directory (issue 27,
"no silent fresh start"): the example configurations the image ships carry `[journal]
outside_mark` (image/outside-mark.toml, appended by image/customize.sh), tmpfiles makes its
directory on the data partition for the daemon's user, and the unit's drop-in makes it the
daemon's to write. A state directory that is gone is then refused by the table alone
(controller/journal/marks.py; the VM check `test_a_vanished_state_directory_is_refused`)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

from controller.config import validate_text

REPO = Path(__file__).resolve().parent.parent
SNIPPET = REPO / "image/outside-mark.toml"
DROPIN = REPO / "image/overlay/etc/systemd/system/tablectld.service.d/persistent.conf"
TMPFILES = REPO / "image/overlay/usr/lib/tmpfiles.d/tablectl-image.conf"
CUSTOMIZE = REPO / "image/customize.sh"


def _service() -> configparser.SectionProxy:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DROPIN)
    return unit["Service"]


def _shipped_examples() -> list[tuple[str, str]]:
    """(example, image file) as customize.sh writes them: `cat EXAMPLE SNIPPET > FILE`."""
    got = re.findall(r'^cat "\$REPO/examples/([\w-]+\.toml)" "\$REPO/image/outside-mark\.toml" '
                     r'>"\$ROOT(/etc/tablectl/[\w.-]+)"$', CUSTOMIZE.read_text(), re.M)
    return got


def test_every_example_the_image_ships_gets_the_outside_mark() -> None:
    shipped = _shipped_examples()
    assert {f for _, f in shipped} == {"/etc/tablectl/table.toml.example",
                                       "/etc/tablectl/uth-nsw.toml.example"}
    # No other example is installed bare.
    assert not re.search(r'install[^\n]*examples/', CUSTOMIZE.read_text())


@pytest.mark.parametrize("example", [e for e, _ in _shipped_examples()])
def test_the_shipped_example_validates_with_a_mark_outside_its_state_directory(
        example: str) -> None:
    text = (REPO / "examples" / example).read_text() + SNIPPET.read_text()
    cfg = validate_text(text, example)
    mark = cfg.journal.outside_mark
    assert mark is not None and mark.is_absolute()
    # The daemon's state directory on the image is the data-partition side of its BindPaths=.
    source, target = _service()["BindPaths"].split(":")
    assert cfg.service.state_dir == Path(target)
    for state in (Path(source), Path(target)):
        assert not mark.is_relative_to(state), (mark, state)


def test_the_marks_directory_is_made_for_the_daemon_and_writable_in_its_sandbox() -> None:
    mark = validate_text((REPO / "examples/uth-nsw.toml").read_text() + SNIPPET.read_text(),
                         "uth").journal.outside_mark
    assert mark is not None
    directory = str(mark.parent)
    # ProtectSystem=strict: only what ReadWritePaths= names is writable beside the state dir.
    assert directory in _service()["ReadWritePaths"].split()
    line = re.search(rf"^d {re.escape(directory)} (\d+) (\S+) (\S+)", TMPFILES.read_text(), re.M)
    assert line is not None, f"tmpfiles does not make {directory}"
    assert (line.group(2), line.group(3)) == ("tablectl", "tablectl")
    assert int(line.group(1), 8) & 0o007 == 0  # not for every user
    # Excluded from cleaning like the state directory itself.
    assert re.search(rf"^x {re.escape(directory)}$", TMPFILES.read_text(), re.M)


@pytest.mark.parametrize("name", ["vm-uth.toml", "vm-paigow.toml"])
def test_the_vm_tables_keep_their_marks_in_that_directory_one_each(name: str) -> None:
    marks = {}
    for each in ("vm-uth.toml", "vm-paigow.toml"):
        cfg = validate_text((REPO / "examples" / each).read_text(), each)
        marks[each] = cfg.journal.outside_mark
    mine = marks[name]
    assert mine is not None
    assert str(mine.parent) in _service()["ReadWritePaths"].split()
    assert len(set(marks.values())) == 2  # two tables on one data partition: two marks
