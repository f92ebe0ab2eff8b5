"""What a daemon start imports (docs/daemon.md "Start-up"): a Pai Gow table's never reaches
UTH's round machine, whose settlement builds the hand evaluator's tables at import (~0.6 s
here, tens of seconds under the VM's TCG; the keypad check of the config once pulled it in)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.daemon import REPO

PROBE = """
import json, sys
from controller.config import load_config
from controller.config.machine import build_machine
import controller.daemon.main, controller.extensions.verify  # as tablectld imports them
build_machine(load_config(sys.argv[1]))
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("controller.", "devices.")))))
"""


def _modules(config: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(REPO / "examples" / config)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    return set(json.loads(out.stdout))


@pytest.mark.parametrize(
    ("config", "game", "other"),
    [
        ("paigow-nsw.toml", "paigow", "uth"),
        ("uth-nsw.toml", "uth", "paigow"),
    ],
)
def test_a_table_loads_its_own_games_machine_only(config: str, game: str, other: str) -> None:
    mods = _modules(config)
    assert f"controller.rounds.{game}.machine" in mods  # its own: the keypad check, the play
    assert f"controller.rounds.{other}.machine" not in mods, sorted(mods)
    if game == "paigow":  # the UTH config's parts (deal methods, cards) are cheap; not these
        assert not {"controller.games.uth.evaluator", "controller.games.uth.settlement"} & mods


TABLES = """
import sys
{setup}
from controller.games.uth import evaluator
print(bool(evaluator._FLUSH))
"""


@pytest.mark.parametrize(
    ("setup", "built"),
    [
        # Every `tablectl` command imports the CLI's UTH commands (for `Spot`), and `status` is
        # polled by technicians and the health check: ~4 s of CPU each under qemu-user when built.
        ("import controller.cli.main", False),
        ("from controller.cli.main import build_parser; build_parser()", False),
        # A UTH table builds them before READY, never at its first showdown inside the loop.
        ("from controller.rounds.uth import UthMachine; UthMachine()", True),
    ],
)
def test_the_hand_tables_are_built_by_a_uth_table_only(setup: str, built: bool) -> None:
    out = subprocess.run(
        [sys.executable, "-c", TABLES.format(setup=setup)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.stdout.strip() == str(built)


DEVICES = """
import json, random, sys
import controller.daemon.main  # as tablectld imports it
from controller.config import load_config
from controller.daemon.build import build_devices
at_import = set(sys.modules)
if sys.argv[2] == "simulate":
    from controller.daemon.build import simulation_config
    from pathlib import Path
    game = "uth" if "uth" in sys.argv[1] else "paigow"
    cfg = simulation_config(game, "nsw", Path(sys.argv[3]), Path(sys.argv[3]))
    build_devices(cfg, random.Random(1))
print(json.dumps([sorted(at_import), sorted(set(sys.modules) - at_import)]))
"""


def _device_modules(config: str, mode: str, tmp: str) -> tuple[set[str], set[str]]:
    out = subprocess.run(
        [sys.executable, "-c", DEVICES, config, mode, tmp],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    at_import, built = json.loads(out.stdout)
    return set(at_import), set(built)


def test_importing_the_daemon_loads_no_driver_simulator_systemd_serial_or_ctypes(
    tmp_path: Path,
) -> None:
    # Issue 31: `import controller.daemon.main` pulled 46 `devices` modules, every simulator,
    # pyserial, systemd-python and ctypes. Configs and interfaces only, now.
    at_import, _ = _device_modules("uth-nsw.toml", "import", str(tmp_path))
    heavy = {
        m
        for m in at_import
        if m.split(".")[0] in {"serial", "serial_asyncio_fast", "systemd", "ctypes"}
        or (
            m.startswith("devices.")
            and m.rsplit(".", 1)[-1]
            in {"sim", "driver", "wire", "gpio", "serial_port", "serial_line", "pty_sim"}
        )
    }
    assert heavy == set(), sorted(heavy)


@pytest.mark.parametrize(
    ("game", "own", "other"),
    [
        ("uth", "shuffler", "shaker"),
        ("paigow", "shaker", "shuffler"),
    ],
)
def test_a_simulated_table_loads_its_own_devices_simulators_only(
    tmp_path: Path, game: str, own: str, other: str
) -> None:
    at_import, built = _device_modules(f"{game}-nsw.toml", "simulate", str(tmp_path))
    assert f"devices.{own}.sim" in built and "devices.sensors.sim" in built  # with --simulate
    loaded = at_import | built
    # The other game's device: its config section is read (and refused if wrong), no more.
    assert not {f"devices.{other}.{m}" for m in ("model", "sim", "driver", "wire")} & loaded
    assert not {m for m in loaded if m.endswith((".driver", ".wire"))}, sorted(loaded)


def test_the_program_version_is_the_installed_distributions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read without importlib.metadata (issue 31), it must still answer what that would.
    import importlib.metadata

    from controller.about import program_version

    assert program_version() == importlib.metadata.version("tablectl")
    dist = tmp_path / "tablectl-9.8.7.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.4\nName: tablectl\nVersion: 9.8.7\n\nVersion: not a header: the body\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert program_version() == importlib.metadata.version("tablectl") == "9.8.7"


PARSED = """
import json, sys
from controller.daemon.main import parse_args, load
from controller.config.machine import build_machine
args = parse_args(["--simulate", "--game", sys.argv[1], "--state-dir", sys.argv[2]])
build_machine(load(args))
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("game", ["uth", "paigow"])
def test_a_started_table_imports_no_shutil_archivers_or_difflib(tmp_path: Path, game: str) -> None:
    # Issue 31 (a READY UTH table <= 30 MB): argparse's own help formatter imports shutil (and
    # bz2, lzma with it) for the terminal's width at every add_argument, and the config reader
    # imported difflib for an unknown key's hint: ~0.5 MB of the table's resident memory.
    out = subprocess.run(
        [sys.executable, "-c", PARSED, game, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
    )
    assert not {"shutil", "bz2", "lzma", "difflib"} & set(json.loads(out.stdout))


WIDTH = """
import argparse, json
from controller.daemon.main import HelpFormatter
print(json.dumps([argparse.HelpFormatter("p")._width, HelpFormatter("p")._width]))
"""


@pytest.mark.parametrize("columns", [None, "100", "0", "wide"])
def test_the_daemons_help_is_as_wide_as_argparse_would_make_it(columns: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    out = subprocess.run(
        [sys.executable, "-c", WIDTH],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=120,
        env=env,
    )
    argparse_width, ours = json.loads(out.stdout)
    assert ours == argparse_width
