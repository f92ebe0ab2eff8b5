"""systemd/tablectl-headoffice-console.service: `systemd-analyze verify` clean, exposure within
the project's target, the worker's user and state directory (so both reach one ledger), the
accounts as a credential, and an ExecStart that parses to the console command."""

from __future__ import annotations

import shlex
from pathlib import Path

from headoffice.cli import parse_args
from tests.test_systemd_units import (
    EXPOSURE_TARGET,
    HEADOFFICE_UNIT,
    directives,
    exposure,
    needs_analyze,
    run_verify,
    scratch_root,
)

UNIT = Path(__file__).resolve().parent.parent / "systemd/tablectl-headoffice-console.service"


@needs_analyze
def test_systemd_analyze_verify_is_clean(tmp_path: Path) -> None:
    result = run_verify(scratch_root(tmp_path, UNIT), UNIT.name)
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


@needs_analyze
def test_security_exposure_meets_the_target() -> None:
    assert exposure(UNIT) <= EXPOSURE_TARGET


def test_it_shares_the_workers_user_and_ledger_and_stays_on_this_machine() -> None:
    d, worker = directives(UNIT), directives(HEADOFFICE_UNIT)
    # The worker's dynamic user is named after its unit; the same name, the same uid.
    assert d["Service.DynamicUser"] == ["yes"] and worker["Service.DynamicUser"] == ["yes"]
    assert d["Service.User"] == [HEADOFFICE_UNIT.stem]
    assert d["Service.StateDirectory"] == worker["Service.StateDirectory"]
    assert d["Service.IPAddressDeny"] == ["any"] and d["Service.IPAddressAllow"] == ["localhost"]
    # Every hardening directive of the worker's unit is here with the same value.
    for key, value in worker.items():
        if key.startswith("Service.") and key not in (
                "Service.ExecStart", "Service.RuntimeDirectory", "Service.TimeoutStopSec"):
            assert d.get(key) == value, key


def test_exec_start_is_the_console_with_the_accounts_credential() -> None:
    (line,) = directives(UNIT)["Service.ExecStart"]
    assert "${CREDENTIALS_DIRECTORY}/headoffice-console.toml" in line
    (cred,) = directives(UNIT)["Service.LoadCredential"]
    assert cred == "headoffice-console.toml:/etc/tablectl/headoffice-console.toml"
    argv = shlex.split(line.replace("${CREDENTIALS_DIRECTORY}", "/run/credentials/x"))
    assert argv[0] == "/opt/tablectl/bin/tablectl-headoffice"
    args = parse_args(argv[1:])
    assert args.cmd == "console"
    assert str(args.config) == "/etc/tablectl/headoffice.toml"
    assert args.console_config == "/run/credentials/x/headoffice-console.toml"
    assert args.listen is None  # the console config's, loopback by default
