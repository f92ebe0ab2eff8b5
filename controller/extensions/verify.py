"""The daemon's software verification (an Extension, extensions/base.py).

At start: the installed program is checked against its signed manifest (controller/verify/).
A mismatch, a bad signature, or a manifest the settings promise but that is missing takes the
table out of service before play: logged (each file named), shown on the meter, in
`tablectl status`. It fails closed: with no settings at all the table is out of service too,
unless it runs in an explicit mode that may play unverified -- simulation (`--simulate`) or
development (`service.development = true`, refused on an installed table, see
`installed_layout`) -- and then the status and the log say the software is not verified.

Control-socket commands (the game goes on while they run, in a worker thread):
  verify_hmac {seed: HEX}  HMAC-SHA1/HMAC-SHA256 over the installed program (GAT-style)
  verify_run {}            the full check again; a failure takes the table out of service
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

from controller.control import Refused
from controller.extensions.base import Table
from controller.logs import event as log_event
from controller.verify import (
    MAX_PROBLEMS_SHOWN,
    ManifestError,
    Report,
    Settings,
    hmac_installed,
    load_settings,
    parse_seed,
)
from devices.base import DeviceError

METER_TEXT = "OUT OF SERVICE - SOFTWARE"
NOT_CONFIGURED = "no manifest configured: the installed program is not verified"
MISSING = (
    "no software verification settings (share/tablectl/verification.toml): an unverified"
    " program never plays (only --simulate or service.development = true may run unverified)"
)
UNVERIFIED_MODES = ("simulation", "development")
INSTALL_PREFIX = Path("/opt/tablectl")
# Written by image/customize.sh into the installed venv: this program is an installed table.
INSTALLED_MARKER = Path("share/tablectl/installed")


def installed_layout(prefix: Path | None = None) -> bool:
    """An installed table: the program runs from /opt/tablectl (the image's venv) or its venv
    holds the marker the image build writes. Both are on the read-only root; development
    mode from the (writable) configuration never lifts verification there."""
    prefix = Path(sys.prefix) if prefix is None else prefix
    return prefix == INSTALL_PREFIX or (prefix / INSTALLED_MARKER).is_file()


# The child's report (each problem a line; a wholesale mismatch names every file): read up to
# this much, the rest drained and discarded, and a report cut short is an error.
MAX_REPORT_BYTES = 8 << 20
MAX_STDERR_BYTES = 16 << 10


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    """Everything up to EOF, keeping at most `cap` bytes (the writer is never left blocked);
    True when more came."""
    kept = bytearray()
    over = False
    while chunk := await stream.read(1 << 16):
        room = cap - len(kept)
        over = over or len(chunk) > room
        kept += chunk[:max(room, 0)]
    return bytes(kept), over


async def _verify_in_child(s: Settings) -> Report:
    """The check in a fresh interpreter that exits afterwards (`python -m controller.verify
    verify --json`): the signature check needs `cryptography`, 7 MB that would otherwise stay
    in the daemon for good (docs/daemon.md). A plain child, not a multiprocessing one: a
    `spawn` child imports the parent's main module first, i.e. the whole daemon, before doing
    anything (docs/daemon.md, "Start-up"). `-P`: never the working directory on its path."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-P", "-m", "controller.verify", "verify", str(s.manifest),
        "--signature", str(s.signature), "--public-key", str(s.public_key),
        "--root", str(s.root), "--json",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        (out, too_long), (err, _) = await asyncio.gather(
            _read_capped(proc.stdout, MAX_REPORT_BYTES),
            _read_capped(proc.stderr, MAX_STDERR_BYTES))
        code = await proc.wait()
    finally:
        if proc.returncode is None:  # cancelled (the daemon stops): the child goes too
            proc.kill()
            await proc.wait()
    said = err.decode(errors="replace").strip()[-500:]
    if too_long:
        raise ManifestError(f"the check's report is over {MAX_REPORT_BYTES} bytes")
    if code not in (0, 1):  # 0: verified, 1: a failed check, reported; anything else: broken
        raise ManifestError(f"the check exited with {code}: {said or 'nothing on stderr'}")
    try:
        report = Report.from_json(json.loads(out))
    except ValueError as exc:  # not JSON (ManifestError is a ValueError too)
        raise ManifestError(f"the check's report: {exc}") from None
    if report.ok != (code == 0):
        raise ManifestError(f"the check exited with {code} but reported ok={report.ok}")
    return report


class SoftwareVerification:
    name = "verification"

    def __init__(
        self,
        log: logging.Logger,
        settings: Settings | None = None,
        *,
        settings_error: str | None = None,
        mode: str = "production",
    ) -> None:
        self.log = log
        self.settings = settings
        self.settings_error = settings_error
        # production: verified or out of service; simulation/development may run unverified.
        self.mode = mode
        self.report: Report | None = None
        self.table: Table | None = None
        self.hmac_requests = 0
        self._busy = asyncio.Lock()
        self._early: asyncio.Task[Report] | None = None  # begin()'s child, until start() reads it

    @classmethod
    def installed(
        cls, log: logging.Logger, path: Path | None = None, *, mode: str = "production"
    ) -> SoftwareVerification:
        """Settings from $TABLECTL_VERIFICATION or the venv's share/tablectl/verification.toml."""
        try:
            return cls(log, load_settings(path), mode=mode)
        except ManifestError as exc:  # settings exist but are unusable: fail closed
            return cls(log, None, settings_error=str(exc), mode=mode)

    # -- Extension ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start the check's child now, at the top of the daemon's start (TableService.run):
        the journal's replay and the devices' start go on beside it, on another core, instead
        of before it (under the VM's TCG the check is ~10 s of a 20-50 s start). Nothing plays
        any earlier: start() waits for this child's report before READY, as it waited for its
        own child before."""
        if self.settings is not None and self.settings_error is None and self._early is None:
            self._early = asyncio.ensure_future(_verify_in_child(self.settings))

    async def start(self, table: Table) -> None:
        self.table = table
        if self.settings_error is not None:
            await self._fail(f"software verification settings unusable: {self.settings_error}")
            return
        if self.settings is None:
            if self.mode not in UNVERIFIED_MODES:
                await self._fail(f"software verification: {MISSING}")
                return
            log_event(
                self.log,
                logging.WARNING,
                f"software verification: {NOT_CONFIGURED} ({self.mode} mode)",
                mode=self.mode, code="E801",
            )
            return
        await self._check()

    async def stop(self) -> None:
        self.table = None
        early, self._early = self._early, None
        if early is not None and not early.done():  # stopped before start() read it
            early.cancel()  # its child is killed (_verify_in_child)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await early

    def handlers(self) -> dict[str, Any]:
        return {"verify_hmac": self._h_hmac, "verify_run": self._h_run}

    def status(self) -> dict[str, Any]:
        if self.settings_error is not None:
            return {"state": "failed", "detail": self.settings_error}
        if self.settings is None:
            if self.mode not in UNVERIFIED_MODES:
                return {"state": "missing", "detail": MISSING, "mode": self.mode}
            detail = f"{NOT_CONFIGURED} ({self.mode} mode)"
            return {"state": "not_configured", "detail": detail, "mode": self.mode}
        if self.report is None:
            return {"state": "checking", "settings": self.settings.as_json()}
        return {
            "state": "verified" if self.report.ok else "failed",
            "detail": self.report.summary(),
            **self.report.as_json(),
            "problems": self.report.problems[:MAX_PROBLEMS_SHOWN],
            "problem_count": len(self.report.problems),
            "settings": self.settings.as_json(),
            "hmac_requests": self.hmac_requests,
        }

    # -- the check ------------------------------------------------------------------------------

    async def _check(self) -> Report:
        assert self.settings is not None
        s = self.settings
        async with self._busy:
            early, self._early = self._early, None  # begun at the daemon's start (begin())
            try:
                report = await (early if early is not None else _verify_in_child(s))
            except Exception as exc:  # never crash the daemon over what is on disk
                report = Report(ok=False, problems=[f"verification error: {exc!r}"])
        self.report = report
        if report.ok:
            log_event(
                self.log,
                logging.INFO,
                report.summary(),
                files=report.files,
                bytes=report.bytes,
                manifest_sha256=report.manifest_sha256,
                key=report.key_fingerprint,
                elapsed_s=report.elapsed_s,
            )
        else:
            for line in report.problems[:MAX_PROBLEMS_SHOWN]:
                log_event(self.log, logging.CRITICAL, f"software verification: {line}",
                          code="E401")
            await self._fail(report.summary())
        return report

    async def _fail(self, reason: str) -> None:
        table = self.table
        if table is None:
            return
        table.go_out_of_service(reason, code="E401")
        meter = table.devices.get("meter")
        if meter is not None:
            try:
                await meter.command("closed", {"text": METER_TEXT})
            except DeviceError as exc:
                log_event(self.log, logging.ERROR, f"meter did not show out of service: {exc}",
                          device="meter", code="E202")

    # -- control socket -------------------------------------------------------------------------

    async def _h_hmac(self, args: dict[str, Any]) -> dict[str, Any]:
        seed = parse_seed(str(args.get("seed", "")))  # ManifestError -> an error reply
        if self.settings is None:
            raise Refused(self.settings_error or NOT_CONFIGURED)
        self.hmac_requests += 1
        async with self._busy:
            try:
                result = await asyncio.to_thread(hmac_installed, self.settings, seed)
            except ManifestError:
                raise
            except Exception as exc:  # an error reply, never a dead control connection
                raise Refused(f"field verification failed: {exc!r}") from exc
        log_event(
            self.log,
            logging.INFO,
            "field verification (HMAC) requested",
            files=result["files"],
            hmac_sha1=result["hmac_sha1"],
            hmac_sha256=result["hmac_sha256"],
        )
        return result

    async def _h_run(self, args: dict[str, Any]) -> dict[str, Any]:
        if self.settings is None:
            raise Refused(self.settings_error or NOT_CONFIGURED)
        return (await self._check()).as_json()
