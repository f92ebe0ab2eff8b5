"""The table's configuration: one TOML file, /etc/tablectl/table.toml by default.

`load_config(path)` and `validate_text(text, source)` return a frozen `TableConfig` or raise
`ConfigError` listing every problem found in one pass, each naming the key path and the reason:

    table.toml: paigow.limits.minimum: must be a positive integer number of cents, got -5

Unknown keys are errors, so a typo never silently falls back to a default. Money is integer
cents everywhere; a float where money is expected is rejected. docs/configuration.md documents
every key.

    model.py     the dataclasses (TableConfig and the table's, link's and jackpot's sections;
                 the games' configs are the round machines': controller/rounds/*/state.py)
    reader.py    ConfigError and the section reader (shared/config_reader.py plus money)
    sections.py  [service], [link]
    games.py     [paigow], [uth]: read, checked, built into PaiGowConfig / UthConfig
    load.py      validate_text, load_config, config_json
The `[devices]` sections are the devices' own: devices/config.py reads them.
"""

from controller.config.load import DEFAULT_PATH, config_json, load_config, validate_text
from controller.config.model import (
    JackpotConfig,
    LinkConfig,
    ServiceConfig,
    TableConfig,
    TlsConfig,
)
from controller.config.reader import ConfigError
from devices.config import SERIAL_DEFAULTS as _SERIAL_DEFAULTS
from devices.config import DevicesConfig
from devices.proto.serial_config import SerialConfig
from devices.sensors.config import GpioConfig

__all__ = [
    "DEFAULT_PATH",
    "_SERIAL_DEFAULTS",
    "ConfigError",
    "DevicesConfig",
    "GpioConfig",
    "JackpotConfig",
    "LinkConfig",
    "SerialConfig",
    "ServiceConfig",
    "TableConfig",
    "TlsConfig",
    "config_json",
    "load_config",
    "validate_text",
]
