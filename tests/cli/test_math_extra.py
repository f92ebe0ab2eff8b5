"""numpy is the `math` extra, not installed on the table image: every other command works
without it, and `tablectl math paigow` (and `demo`) says in one line what is missing, exit 69
(EX_UNAVAILABLE). numpy is hidden from a child process by a package that fails to import as a
missing one does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.common import EX_UNAVAILABLE

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_numpy(tmp_path: Path) -> dict[str, str]:
    hidden = tmp_path / "hidden" / "numpy"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")\n'
    )
    return {**os.environ, "PYTHONPATH": f"{hidden.parent}{os.pathsep}{REPO}"}


def _tablectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli.main", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )


def test_math_paigow_without_numpy_says_so(no_numpy: dict[str, str]) -> None:
    run = _tablectl(no_numpy, "math", "paigow", "--rules", "nsw")
    assert run.returncode == EX_UNAVAILABLE == 69
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr  # one line, no traceback
    assert lines[0].startswith("tablectl: error: the Pai Gow par sheet needs numpy")
    assert "tablectl[math]" in lines[0]


def test_demo_without_numpy_says_so(no_numpy: dict[str, str]) -> None:
    run = _tablectl(no_numpy, "demo")
    assert run.returncode == EX_UNAVAILABLE
    assert run.stderr.count("\n") == 1 and "numpy" in run.stderr


def test_the_table_commands_never_import_numpy(no_numpy: dict[str, str]) -> None:
    code = (
        "import sys; import controller.cli.main, controller.daemon.main, headoffice.cli;"
        " assert 'numpy' not in sys.modules"
    )
    assert subprocess.run([sys.executable, "-c", code], env=no_numpy, cwd=REPO).returncode == 0
    run = _tablectl(no_numpy, "paigow", "houseway", "--rules", "nsw", "T1", "T2", "T3", "T4")
    assert "numpy" not in run.stderr
    assert _tablectl(no_numpy, "--help").returncode == 0
    assert _tablectl(no_numpy, "demo", "--no-math").returncode == 0


def test_numpy_is_only_in_the_math_and_dev_extras() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("numpy") for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert any(d.startswith("numpy") for d in extras["math"])
    assert any(d.startswith("numpy") for d in extras["dev"])
