"""What the image sets for the SD card's writes (docs/daemon.md, "What reaches the card"):
the writeback sysctls of image/overlay/etc/sysctl.d/ and the data partition's mount options of
the VM's fstab, which must be the Pi's (rpi-image-gen's image-rota mounts /persistent with
`rw,noatime,lazytime,commit=60,errors=remount-ro`). The booted VM checks both are in effect
(image/vm/test_vm.py); these check the files, on every run of the suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SYSCTL_D = REPO / "image/overlay/etc/sysctl.d"
DROPIN = SYSCTL_D / "60-tablectl-writeback.conf"
VM_LAYER = REPO / "image/vm/layer.sh"
PROC_SYS = Path("/proc/sys")
# The Linux defaults the drop-in raises: it must only ever defer writeback, never hasten it.
KERNEL_DEFAULTS = {"vm.dirty_expire_centisecs": 3000, "vm.dirty_writeback_centisecs": 500}


def sysctl_d(path: Path) -> dict[str, str]:
    """A sysctl.d file as systemd-sysctl reads it: `key = value` lines, `#`/`;` comments;
    ValueError for any other line or a key given twice."""
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, sep, value = line.partition("=")
        key = key.strip().lstrip("-")  # "-key": systemd-sysctl ignores a failure to set it
        if not sep or not re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", key) or not value.strip():
            raise ValueError(f"{path.name}:{n}: not `key = value`: {raw!r}")
        if key in out:
            raise ValueError(f"{path.name}:{n}: {key} set twice")
        out[key] = value.strip()
    return out


def test_every_shipped_sysctl_file_parses_and_names_keys_this_kernel_has() -> None:
    files = sorted(SYSCTL_D.glob("*.conf"))
    assert DROPIN in files
    for path in files:
        for key, value in sysctl_d(path).items():
            assert (PROC_SYS / key.replace(".", "/")).is_file(), f"{path.name}: no {key}"
            assert value.isdigit(), f"{path.name}: {key} = {value!r} is not a number"


def test_the_writeback_dropin_defers_the_pages_never_fsyncd() -> None:
    values = {k: int(v) for k, v in sysctl_d(DROPIN).items()}
    assert set(values) == set(KERNEL_DEFAULTS)
    expire, every = values["vm.dirty_expire_centisecs"], values["vm.dirty_writeback_centisecs"]
    assert (expire, every) == (30000, 6000)  # the measured choice (docs/daemon.md)
    for key, default in KERNEL_DEFAULTS.items():
        assert values[key] >= default, key
    # The flusher wakes several times within one expiry period, so a page is written within
    # expire + every of its first dirtying (the loss window the drop-in's comment states).
    assert every * 4 <= expire


def fstab_options(mount_point: str) -> list[str]:
    """The options of `mount_point` in the fstab image/vm/layer.sh writes."""
    text = VM_LAYER.read_text()
    fstab = text[text.index("<<'FSTAB'"):text.index("\nFSTAB\n")]
    for line in fstab.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4 and not fields[0].startswith("#") and fields[1] == mount_point:
            return fields[3].split(",")
    raise AssertionError(f"{mount_point} is not in {VM_LAYER}'s fstab")


@pytest.mark.parametrize("option", ["rw", "noatime", "lazytime", "commit=60"])
def test_the_vm_mounts_the_data_partition_as_the_pi_does(option: str) -> None:
    # rpi-image-gen's slot-perst-generator (image-rota): rw,noatime,lazytime,commit=60,
    # errors=remount-ro. Without commit=60 a table's pace writes ~2.5x as much (docs/daemon.md).
    assert option in fstab_options("/persistent")


def test_sysctl_d_refuses_what_systemd_sysctl_would_not_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.conf"
    for text in ("vm.dirty_expire_centisecs 30000\n", "vm.x = 1\nvm.x = 2\n", "= 3\n"):
        bad.write_text(text)
        with pytest.raises(ValueError):
            sysctl_d(bad)
    bad.write_text("# c\n; c\n-vm.dirty_expire_centisecs = 30000\n")
    assert sysctl_d(bad) == {"vm.dirty_expire_centisecs": "30000"}
