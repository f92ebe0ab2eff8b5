"""Standard-library modules a dependency imports at its top but rarely uses, made lazy (issue 31).

paho-mqtt's client (shared/link/transport.py) imports `urllib.request` at its top, and with it
http.client, email, tempfile, shutil, bz2 and lzma: ~2 MB of a linked table's resident memory
and ~40 ms of its start-up here. paho reads it only to find an `mqtt_proxy` in the environment,
and only when PySocks is importable (`paho.mqtt.client._get_proxy`: `if socks is None: return
None` comes first). The table image installs no PySocks, so there paho never touches it. paho's
`uuid` (~0.25 MB) makes a client id only for a client given none; ours always have one.

`defer(name)` enters a stand-in for such a module in `sys.modules`: `import name` binds it, and
the first read of any attribute it lacks imports the real module, puts that in `sys.modules` (and
on its package) and copies its names into the stand-in, so code holding either sees the same
names. importlib.util.LazyLoader does not do here: on Python 3.11 an `import name` of a lazy
module reads its `__spec__`, which loads it at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_LOCK = threading.Lock()


class _Deferred(types.ModuleType):
    """The stand-in: module metadata of its own, everything else from the real module."""

    def __getattr__(self, attr: str) -> Any:  # only for names not (yet) in the stand-in
        return getattr(_load(self), attr)


def _load(stand_in: _Deferred) -> types.ModuleType:
    name = stand_in.__name__
    with _LOCK:
        module = sys.modules.get(name)
        if module is stand_in:
            del sys.modules[name]
            try:
                module = importlib.import_module(name)
            except BaseException:
                sys.modules[name] = stand_in
                raise
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
        assert module is not None
        stand_in.__dict__.update(
            (k, v) for k, v in module.__dict__.items() if k not in stand_in.__dict__
        )
        return module


def defer(name: str) -> bool:
    """Make `name` a stand-in unless it is imported already (or absent); whether it did."""
    if name in sys.modules:
        return False
    spec = importlib.util.find_spec(name)
    if spec is None:
        return False
    stand_in = _Deferred(name)
    stand_in.__spec__ = spec
    stand_in.__loader__ = spec.loader
    stand_in.__package__ = spec.parent
    stand_in.__file__ = spec.origin
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent:  # as an import binds a submodule on its package (urllib.request on urllib)
        setattr(sys.modules[parent], child, stand_in)
    return True


def installed(name: str) -> bool:
    """Whether `name` could be imported, without importing it."""
    return sys.modules.get(name) is not None or importlib.util.find_spec(name) is not None
