"""The table's journal key is made once and never replaced (docs/journal.md, "Keyed chain"):
`tablectl journal keygen`, which tablectl-journal-key.service runs on the first start."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from controller.journal.mac import KEY_HEX_CHARS, find_key, read_key_file
from tests.test_systemd_units import DAEMON_UNIT, KEY_UNIT, directives

TABLECTL = [sys.executable, "-m", "controller.cli.main"]


def keygen(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, "journal", "keygen", str(path), "--json"],
                          capture_output=True, text=True, timeout=60)


def test_keygen_makes_a_private_key_once_and_never_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "journal-key"
    made = keygen(path)
    assert made.returncode == 0, made.stderr
    text = path.read_text()
    assert len(text.strip()) == KEY_HEX_CHARS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = read_key_file(path)
    assert key.key_id in made.stdout
    again = keygen(path)
    assert again.returncode == 1 and "never replaced" in again.stderr
    assert path.read_text() == text  # the journal it protects can still be reopened


def test_keygen_follows_the_images_dangling_link_to_the_data_partition(tmp_path: Path) -> None:
    # On the image /etc/tablectl/journal-key is a link into /persistent (read-only root).
    persistent = tmp_path / "persistent/etc/tablectl"
    persistent.mkdir(parents=True)
    link = tmp_path / "etc/tablectl/journal-key"
    link.parent.mkdir(parents=True)
    link.symlink_to(persistent / "journal-key")
    assert not link.exists()  # dangling: ConditionPathExists=! lets the unit run
    made = keygen(link)
    assert made.returncode == 0, made.stderr
    assert link.is_symlink() and (persistent / "journal-key").is_file()
    assert find_key(tmp_path, key_file=link).secret == read_key_file(
        persistent / "journal-key").secret


def test_the_daemon_unit_starts_only_after_the_key_is_made() -> None:
    daemon = directives(DAEMON_UNIT)
    key_unit = directives(KEY_UNIT)
    assert "tablectl-journal-key.service" in daemon["Unit.Requires"]
    assert "tablectl-journal-key.service" in " ".join(daemon["Unit.After"])
    credential = next(v for v in daemon["Service.LoadCredential"] if v.startswith("journal-key:"))
    key_path = credential.split(":", 1)[1]
    # The key unit runs only while that file is missing, and writes exactly that file.
    assert key_unit["Unit.ConditionPathExists"] == [f"!{key_path}"]
    assert key_unit["Service.ExecStart"][0].split()[-1] == key_path
    assert key_unit["Service.UMask"] == ["0077"]
