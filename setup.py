"""The build step pyproject.toml cannot declare: the UTH hand evaluator's tables, computed once
here and shipped as package data (controller/games/uth/tables_file.py). Everything else about
the package is in pyproject.toml."""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithTables(build_py):
    """build_py, then `evaluator_tables.bin`: into the wheel's tree, or for an editable install
    (`pip install -e`, ./dev setup) into the source tree the install points at."""

    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(HERE))  # this checkout's code, not an installed tablectl
        from controller.games.uth import tables_file

        rel = Path("controller", "games", "uth", tables_file.FILE_NAME)
        root = HERE if getattr(self, "editable_mode", False) else Path(self.build_lib)
        written = tables_file.write(root / rel)
        if written != tables_file.SHA256:
            raise SystemExit(f"{rel}: SHA-256 {written}, expected {tables_file.SHA256}")


setup(cmdclass={"build_py": BuildPyWithTables})
