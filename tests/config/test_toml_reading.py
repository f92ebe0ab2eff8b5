"""table.toml and headoffice.toml are read by one reader (shared/config_reader.py: read_text,
parse_toml): a file that is missing, not UTF-8 or not TOML is reported in one line naming the
file, the same words for both, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.config import ConfigError
from controller.config import load_config as load_table
from headoffice.config import HeadOfficeConfigError
from headoffice.config import load_config as load_headoffice

LOADERS: list[tuple[Callable[[Path], Any], type[Exception]]] = [
    (load_table, ConfigError),
    (load_headoffice, HeadOfficeConfigError),
]


def _errors(load: Callable[[Path], Any], error: type[Exception], path: Path) -> list[str]:
    with pytest.raises(error) as raised:
        load(path)
    return raised.value.errors  # type: ignore[attr-defined]


@pytest.mark.parametrize(("load", "error"), LOADERS, ids=["table", "headoffice"])
def test_a_broken_file_is_one_line_naming_it(
    tmp_path: Path, load: Callable[[Path], Any], error: type[Exception]
) -> None:
    missing = tmp_path / "missing.toml"
    assert _errors(load, error, missing) == [f"{missing}: cannot read: No such file or directory"]

    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'name = "caf\xe9"\n')
    (line,) = _errors(load, error, latin)
    assert line.startswith(f"{latin}: cannot read: 'utf-8' codec can't decode byte 0xe9")

    bad = tmp_path / "bad.toml"
    bad.write_text("table_id = \n")
    (line,) = _errors(load, error, bad)
    assert line.startswith(f"{bad}: not valid TOML: Invalid value")

    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert _errors(load, error, deep) == [f"{deep}: not valid TOML: nested too deeply"]
