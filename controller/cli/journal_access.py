"""Whether `journalctl` could read the system journal for us: run by a user outside
`systemd-journal`, `adm` and the journal directory's ACL groups, it exits 0 with no entries and
says why only on stderr (systemd's journal-util.c: the "Hint: You are currently not seeing
messages from other users and the system" notice, or "No journal files were opened due to
insufficient permissions"). `tablectl logs` turns that into one line naming the cause instead
of an empty answer (issue 28 item 7)."""

from __future__ import annotations

import getpass

# journalctl's own words (systemd 252, src/shared/journal-util.c), as it prints them.
NOT_SEEING = "not seeing messages from other users and the system"
NO_FILES = "insufficient permissions"


def unreadable(stderr: str, user: str | None = None) -> str | None:
    """The message for a person when journalctl could not read the system's lines, else None."""
    if NOT_SEEING not in stderr and NO_FILES not in stderr:
        return None
    who = user or getpass.getuser()
    return (f"cannot read the system journal as user {who}: journalctl shows only your own "
            "lines to a user outside systemd-journal, adm and the journal's ACL groups (on the "
            "table image: tablectl-tech, tablectl-super). Ask for the group, log in again, or "
            "use --source daemon (the daemon's last lines)")
