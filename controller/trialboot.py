"""Whether this boot is the trial boot of an A/B update (the Raspberry Pi firmware's tryboot,
docs/operations.md "Update (A/B) and roll back"): until tablectl-health.service commits the new
slot, a failed check or a power cut boots the old software again, so nothing the old software
could not read may be written meanwhile (the journal's schema-4 upgrade waits: docs/journal.md,
"Schema 4")."""

from __future__ import annotations

from pathlib import Path

BOOTLOADER = Path("/proc/device-tree/chosen/bootloader")


def in_trial_boot(bootloader: Path = BOOTLOADER) -> bool | None:
    """True on a tryboot, False otherwise (no device tree: not a Pi, or firmware without A/B);
    None when the firmware's value is there but unreadable or malformed (the caller decides
    what is safe). The value is a big-endian 32-bit integer, as tablectl-slot reads it."""
    path = bootloader / "tryboot"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return None
    if len(raw) != 4:
        return None
    return int.from_bytes(raw, "big") == 1
