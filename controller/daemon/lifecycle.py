"""The daemon's start line: an Extension (extensions/base.py) placed right after software
verification, so the line can say what the check found. The stop line is the daemon's last
(daemon/main.py), after the journal is closed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from controller.about import program_version
from controller.extensions.base import Table
from controller.logs import event as log_event
from controller.logs import route

if TYPE_CHECKING:
    from controller.extensions.verify import SoftwareVerification


class StartLine:
    name = "program"

    def __init__(self, log: logging.Logger, verification: SoftwareVerification) -> None:
        self.log = log
        self.verification = verification
        self.version = program_version()

    async def start(self, table: Table) -> None:
        v = self.verification.status()
        state = v.get("state")
        if state == "verified":
            what, level = f"software verified, manifest sha256 {v.get('manifest_sha256')}", 20
        else:  # not configured (a warning already said so) or failed (critical lines above)
            what, level = f"software NOT verified: {v.get('detail')}", 30
        fields: dict[str, Any] = {"version": self.version, "verification": state}
        if state == "not_configured":  # allowed only off play (simulation, development)
            fields["code"] = "E801"
        if v.get("manifest_sha256"):
            fields["manifest_sha256"] = v["manifest_sha256"]
        log_event(
            self.log,
            level,
            f"tablectld {self.version} started: table {table.cfg.table_id}, game"
            f" {table.cfg.game}; {what}",
            **fields,
        )
        game_cfg = table.cfg.uth or table.cfg.paigow
        departure = getattr(getattr(game_cfg, "cards", None), "departure", None)
        if departure:  # issue 29: a profile's card rule switched off is said at every start
            log_event(self.log, 30, departure, table=table.cfg.table_id)

    async def stop(self) -> None:
        return None

    def handlers(self) -> dict[str, Any]:
        return {}

    def status(self) -> dict[str, Any]:
        return {"version": self.version, "log_route": route(self.log)}


def stop_line(log: logging.Logger, exit_code: int) -> None:
    level = logging.INFO if exit_code == 0 else logging.ERROR
    log_event(log, level, f"tablectld {program_version()} stopped (exit {exit_code})",
              exit_code=exit_code)
