"""The daemon's software verification runs in a child process (controller/extensions/verify.py):
a plain `python -P -m controller.verify verify --json`, read back as a `Report`. What comes back
is checked and bounded; the child never re-runs the daemon's main module (a multiprocessing
`spawn` child did, docs/daemon.md "Start-up") nor imports from the working directory."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.extensions import verify as ext_verify
from controller.extensions.verify import SoftwareVerification
from controller.logs import setup as log_setup
from controller.verify import ManifestError, Report
from tests.daemon.test_verify import _service, check, install
from tests.support.daemon import REPO

TAMPERED = "opt/tablectl/bin/tablectld"


def test_a_report_reads_back_as_it_was_written(tmp_path: Path) -> None:
    s = install(tmp_path)
    good = check(s)
    (s.root / TAMPERED).write_bytes(b"#!/bin/sh\nexec evil\n")
    bad = check(s)
    for report in (good, bad):
        again = Report.from_json(json.loads(json.dumps(report.as_json())))
        assert again == report
    assert good.ok and not bad.ok and bad.problems[0].startswith(TAMPERED)


def _doc(**changes: object) -> dict[str, object]:
    doc = Report(ok=False, problems=["x: missing"], files=3, bytes=10).as_json()
    doc.update(changes)
    return doc


@pytest.mark.parametrize(("doc", "says"), [
    ([], "not a verification report"),
    ({k: v for k, v in _doc().items() if k != "files"}, "not a verification report"),
    ({**_doc(), "extra": 1}, "not a verification report"),
    (_doc(files="3"), "files is '3'"),
    (_doc(files=True), "files is True"),
    (_doc(ok=1), "ok is 1"),
    (_doc(problems="x: missing"), "problems is"),
    (_doc(problems=[3]), "not a string"),
    (_doc(ok=True), "ok contradicts"),
    (_doc(problems=[]), "ok contradicts"),
    (_doc(version=7), "version is 7"),
])
def test_anything_but_a_report_is_refused(doc: object, says: str) -> None:
    with pytest.raises(ManifestError, match=says):
        Report.from_json(doc)


def test_a_report_over_its_bound_takes_the_table_out_of_service(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = install(tmp_path)
    (s.root / TAMPERED).write_bytes(b"#!/bin/sh\nexec evil\n")
    monkeypatch.setattr(ext_verify, "MAX_REPORT_BYTES", 64)  # the real report is longer
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 1
    assert "verification error" in (service.out_of_service or "")
    assert "over 64 bytes" in (service.out_of_service or "")
    assert service.stats.rounds == {}


def test_a_controller_package_in_the_working_directory_does_not_check_the_program(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's working directory (/var/lib/tablectl) is writable by its user: a
    `controller` planted there that answers "verified" is never the one that runs."""
    s = install(tmp_path)
    (s.root / TAMPERED).write_bytes(b"#!/bin/sh\nexec evil\n")
    fake = tmp_path / "cwd/controller/verify"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    ok = json.dumps(Report(ok=True, files=5).as_json())
    (fake / "__main__.py").write_text(f"print({ok!r})\n")
    monkeypatch.chdir(tmp_path / "cwd")
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 1
    assert TAMPERED in (service.out_of_service or "")


MAIN = """
import os, sys
with open(sys.argv[1], "a") as marker:  # each run of this module's top level, by pid
    marker.write(f"{os.getpid()}\\n")
if __name__ == "__main__":
    import asyncio
    from pathlib import Path
    from controller.extensions.verify import SoftwareVerification
    from controller.logs import setup
    from tests.daemon.test_verify import _service, install
    tmp = Path(sys.argv[2])
    ext = SoftwareVerification(setup(journald=False), install(tmp))
    sys.exit(asyncio.run(_service(tmp, ext).run()))
"""


def test_the_check_does_not_run_the_daemons_main_module_again(tmp_path: Path) -> None:
    """A multiprocessing `spawn` child first imports the parent's main script (the whole daemon
    for tablectld and the VM's entry point) before it does anything."""
    script, marker = tmp_path / "daemon_main.py", tmp_path / "marker"
    script.write_text(MAIN)
    (tmp_path / "t").mkdir()
    r = subprocess.run([sys.executable, str(script), str(marker), str(tmp_path / "t")],
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]  # verified, one round played
    assert len(marker.read_text().split()) == 1, marker.read_text()  # the daemon's run only


def test_the_check_begins_before_the_journal_opens_and_still_gates_play(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child starts at the top of the daemon's start (`begin`), so the journal's replay and
    the devices' start run beside it (docs/daemon.md, "Start-up"); its report still decides
    before play: a tampered file, found by that early child, means no round at all."""
    from controller.daemon.service import TableService

    s = install(tmp_path)
    (s.root / TAMPERED).write_bytes(b"#!/bin/sh\nexec evil\n")
    order: list[str] = []
    real_child, real_open = ext_verify._verify_in_child, TableService._open_journal

    def child(settings: object) -> object:
        order.append("child")
        return real_child(settings)  # type: ignore[arg-type]

    def open_journal(self: TableService) -> None:
        order.append("journal")
        real_open(self)

    monkeypatch.setattr(ext_verify, "_verify_in_child", child)
    monkeypatch.setattr(TableService, "_open_journal", open_journal)
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 1
    assert order == ["child", "journal"]  # one child, begun first, its report the one used
    assert TAMPERED in (service.out_of_service or "")
    assert service.stats.rounds == {}


def test_a_check_begun_but_never_read_is_killed_at_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A daemon stopped between `begin` and the extension's start leaves no child running."""
    s = install(tmp_path)
    ext = SoftwareVerification(log_setup(journald=False), s)
    pids: list[int] = []
    real_exec = asyncio.create_subprocess_exec

    async def spy(*args: object, **kw: object) -> asyncio.subprocess.Process:
        proc = await real_exec(*args, **kw)  # type: ignore[arg-type]
        pids.append(proc.pid)
        return proc

    monkeypatch.setattr(asyncio, "create_subprocess_exec", spy)

    async def scenario() -> asyncio.Task[Report] | None:
        ext.begin()
        early = ext._early
        while not pids:
            await asyncio.sleep(0.01)
        await ext.stop()
        return early

    early = asyncio.run(scenario())
    assert early is not None and early.cancelled()
    assert ext._early is None
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pids[0], 0)
