"""A technician on the installed table sees the daemon's logs, and a person locked out by the
start limit is told the way out (issue 28 item 7).

- The image's tmpfiles.d gives the role groups a read ACL on the persistent journal, inherited
  by the journal files journald makes later: systemd-tmpfiles applies the shipped file to a root
  with a machine id and journal files, and the ACLs are read back from the kernel.
- `tablectl logs` where journalctl could not read the system's lines says so (exit 2) instead
  of printing nothing. journalctl's notices are systemd 252's own words; this machine has no
  journald, so a `journalctl` on PATH prints them as the real one does for such a user.
- The start limit: systemd's rate limit (src/basic/ratelimit.c, `ratelimit_below`: a window
  opens at the first start, every start in it counts, the one past the burst is refused)
  applied to the unit's StartLimitIntervalSec/StartLimitBurst: a technician's ten restarts in
  ten minutes pass, a crash loop still gives up.
- `tablectl status` with the daemon down and its unit at `start-limit-hit` names the way out
  (`systemctl show` as systemd answers it, from a `systemctl` on PATH: no systemd here).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TMPFILES = REPO / "image/overlay/usr/lib/tmpfiles.d/tablectl-image.conf"
UNIT = REPO / "systemd/tablectld.service"
MACHINE_ID = "0123456789abcdef0123456789abcdef"
TECH_GID, SUPER_GID = 64991, 64992
ACL_GROUP, ACL_MASK, ACL_READ, ACL_EXECUTE = 0x08, 0x10, 4, 1


def acl_groups(path: Path, default: bool = False) -> dict[int, int]:
    """Named-group entries of a POSIX ACL (gid -> effective permission bits), as the kernel
    stores it."""
    name = "system.posix_acl_default" if default else "system.posix_acl_access"
    try:
        raw = os.getxattr(path, name)
    except OSError:
        return {}
    out, mask = {}, 7
    for off in range(4, len(raw), 8):
        tag, perm, ident = struct.unpack("<HHI", raw[off:off + 8])
        if tag == ACL_GROUP:
            out[ident] = perm
        elif tag == ACL_MASK:
            mask = perm
    # What the group may do: the entry within the mask (for a file journald makes 0640, r--).
    return {gid: perm & mask for gid, perm in out.items()} if not default else out


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None
                    or shutil.which("systemd-tmpfiles") is None,
                    reason="root, unshare and systemd-tmpfiles are needed")
def test_the_role_groups_read_the_journal_now_and_later(tmp_path: Path) -> None:
    root = tmp_path / "root"
    journal = root / "persistent/log/journal" / MACHINE_ID
    journal.mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "etc/machine-id").write_text(MACHINE_ID + "\n")
    names = (f"systemd-journal:x:64990:\ntablectl:x:64989:\ntablectl-tech:x:{TECH_GID}:\n"
             f"tablectl-super:x:{SUPER_GID}:\n")
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n"
                                     "tablectl:x:64989:64989::/:/usr/sbin/nologin\n")
    (root / "etc/group").write_text("root:x:0:\n" + names)
    old = journal / "system@0001-0002.journal"
    old.write_bytes(b"LPKSHHRH")  # a journal file from before (an updated table)
    conf = root / "usr/lib/tmpfiles.d/tablectl-image.conf"
    conf.parent.mkdir(parents=True)
    shutil.copy(TMPFILES, conf)
    # The ACL's group names resolve through this machine's NSS: the root's groups are bound
    # over /etc/group in a private mount namespace for the one command.
    groups = tmp_path / "group"
    # This machine's own entries of those names (a bench that made the groups) are left out,
    # or the first of two same-named entries would win.
    ours = {line.split(":")[0] for line in names.splitlines()}
    host = [line for line in Path("/etc/group").read_text().splitlines(keepends=True)
            if line.split(":")[0] not in ours]
    groups.write_text("".join(host) + names)
    run = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount --bind {groups} /etc/group && systemd-tmpfiles"
         f" --root={root} --create --prefix=/persistent/log"],
        capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for d in (root / "persistent/log/journal", journal):
        for acl in (acl_groups(d), acl_groups(d, default=True)):
            assert acl.get(TECH_GID) == ACL_READ | ACL_EXECUTE, (d, acl)
            assert acl.get(SUPER_GID) == ACL_READ | ACL_EXECUTE, (d, acl)
    assert acl_groups(old) == {TECH_GID: ACL_READ, SUPER_GID: ACL_READ}
    # A file journald makes afterwards (a rotation) inherits the directory's default entries.
    fd = os.open(journal / "system.journal", os.O_CREAT | os.O_WRONLY, 0o640)
    os.close(fd)
    assert acl_groups(journal / "system.journal") == {TECH_GID: ACL_READ, SUPER_GID: ACL_READ}


def fake_tool(bin_dir: Path, name: str, stdout: str, stderr: str = "", code: int = 0) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(f"#!/bin/sh\nprintf '%s' '{stdout}'\nprintf '%s' '{stderr}' >&2\n"
                    f"exit {code}\n")
    tool.chmod(0o755)


def tablectl(*args: str, path: Path, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "TABLECTL_RUNTIME_DIR"}
    full["PATH"] = f"{path}:{full['PATH']}"
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "controller.cli.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env=full)


HINT = ("Hint: You are currently not seeing messages from other users and the system.\n"
        "      Users in groups \\'adm\\', \\'systemd-journal\\' can see all messages.\n"
        "      Pass -q to turn off this notice.\n")


@pytest.mark.parametrize("notice", [HINT, "No journal files were opened due to insufficient"
                                          " permissions.\n"])
def test_logs_says_it_cannot_read_instead_of_printing_nothing(tmp_path: Path,
                                                              notice: str) -> None:
    fake_tool(tmp_path / "bin", "journalctl", "", notice.replace("\\'", "'\"'\"'"))
    got = tablectl("logs", "--source", "journald", path=tmp_path / "bin")
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert got.stdout == ""
    assert "cannot read the system journal as user" in got.stderr
    assert "tablectl-tech" in got.stderr
    assert "Traceback" not in got.stderr


def test_logs_with_nothing_to_hide_is_not_called_unreadable(tmp_path: Path) -> None:
    line = ('{"MESSAGE": "link down", "PRIORITY": "4", "SYSLOG_IDENTIFIER": "tablectld",'
            ' "__REALTIME_TIMESTAMP": "1764300000000000"}\n')
    fake_tool(tmp_path / "bin", "journalctl", line)
    got = tablectl("logs", "--source", "journald", path=tmp_path / "bin")
    assert got.returncode == 0, got.stderr
    assert "link down" in got.stdout
    assert "cannot read" not in got.stderr


def ratelimit_refuses(starts: list[float], interval: float, burst: int) -> int | None:
    """The index of the first start systemd refuses (start-limit-hit), or None."""
    begin, num = None, 0
    for i, t in enumerate(starts):
        if begin is None or t - begin > interval:
            begin, num = t, 1
            continue
        num += 1
        if num > burst:
            return i
    return None


def unit_limits() -> tuple[float, int, float]:
    text = UNIT.read_text()

    def value(key: str) -> str:
        m = re.search(rf"^{key}=(\S+)", text, re.M)
        assert m, key
        return m[1]
    return (float(value("StartLimitIntervalSec")), int(value("StartLimitBurst")),
            float(value("RestartSec").removesuffix("s")))


def test_a_technician_restarting_by_hand_is_not_locked_out() -> None:
    interval, burst, _ = unit_limits()
    # The case: a few restarts while working on the table, then a few more.
    by_hand = [60.0 * i for i in range(10)]  # ten restarts in ten minutes
    assert ratelimit_refuses(by_hand, interval, burst) is None
    busy = [20.0 * i for i in range(12)]  # twelve, twenty seconds apart
    assert ratelimit_refuses(busy, interval, burst) is None


@pytest.mark.parametrize("fails_after_s, gives_up_within_s", [(1.0, 120.0), (25.0, 600.0)])
def test_a_crash_loop_still_gives_up(fails_after_s: float, gives_up_within_s: float) -> None:
    interval, burst, restart_s = unit_limits()
    starts = [i * (restart_s + fails_after_s) for i in range(200)]
    refused = ratelimit_refuses(starts, interval, burst)
    assert refused is not None and starts[refused] <= gives_up_within_s


def test_status_names_the_way_out_of_the_start_limit(tmp_path: Path) -> None:
    if Path("/run/tablectl/control.sock").exists():
        pytest.skip("a tablectld runs on this machine")
    fake_tool(tmp_path / "bin", "systemctl", "ActiveState=failed\nResult=start-limit-hit\n"
              "StartLimitBurst=20\nStartLimitIntervalUSec=10min\n")
    got = tablectl("status", path=tmp_path / "bin",
                   env={"TABLECTL_CONFIG": str(tmp_path / "none.toml")})
    assert got.returncode == 3, (got.stdout, got.stderr)
    assert "systemd stopped starting it: 20 starts within 10min" in got.stderr
    assert "sudo systemctl reset-failed tablectld && sudo systemctl start tablectld" in got.stderr


def test_a_daemon_run_by_hand_gets_no_unit_hint(tmp_path: Path) -> None:
    fake_tool(tmp_path / "bin", "systemctl", "ActiveState=failed\nResult=start-limit-hit\n")
    got = tablectl("status", "--runtime-dir", str(tmp_path / "run"), path=tmp_path / "bin")
    assert got.returncode == 3
    assert "systemctl" not in got.stderr
