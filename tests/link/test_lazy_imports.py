"""A linked table does not load what paho imports but never reads (shared/lazy_import.py, issue 31:
urllib.request with http.client, email, tempfile, bz2 and lzma; uuid), and what reads them
gets the real modules."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.support.daemon import REPO

# What stays out of a linked table (the image installs no PySocks: "socks" refused as there).
NOT_LOADED = ("urllib.request", "http.client", "email.message", "tempfile", "shutil", "lzma",
              "bz2", "uuid")

PROBE = """
import json, sys
if sys.argv[1] == "no-socks":
    sys.modules["socks"] = None  # as the image: PySocks not installed
import controller.daemon.main, controller.link.extension  # as a linked tablectld imports them
import asyncio
from shared.link import transport

async def make() -> None:  # aiomqtt's client is made in the loop
    client = transport._client(transport.BrokerSettings("127.0.0.1", 1883, "table-T1"))
    client._client._get_proxy()  # what paho's connect asks first

asyncio.run(make())
real = {m for m in sys.modules
        if sys.modules[m] is not None and type(sys.modules[m]).__name__ != "_Deferred"}
print(json.dumps(sorted(real)))
"""


def _loaded(socks: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, socks], capture_output=True, text=True,
                         check=True, cwd=REPO, timeout=120)
    return set(json.loads(out.stdout))


def test_a_linked_table_without_pysocks_loads_none_of_them() -> None:
    loaded = _loaded("no-socks")
    assert "paho.mqtt.client" in loaded and "aiomqtt" in loaded  # the link is there
    assert not set(NOT_LOADED) & loaded, sorted(set(NOT_LOADED) & loaded)


def test_with_pysocks_paho_reads_the_proxy_environment_as_before() -> None:
    pytest.importorskip("socks")
    loaded = _loaded("socks")
    assert "urllib.request" in loaded and "http.client" in loaded  # read at connect
    assert "uuid" not in loaded  # still unread: the client has an id


STAND_IN = """
import sys
from shared import lazy_import
assert lazy_import.defer("uuid") and not lazy_import.defer("uuid")
import uuid
deferred = uuid
print(type(uuid).__name__, "_uuid" in sys.modules)
from uuid import UUID
u = uuid.uuid5(uuid.NAMESPACE_DNS, "tablectl")
print(type(sys.modules["uuid"]).__name__, deferred.UUID is UUID is sys.modules["uuid"].UUID, u)
import email.utils  # a package's submodule: bound on the package once loaded
assert lazy_import.defer("urllib.request")
import urllib.request
print(urllib.request.getproxies is sys.modules["urllib.request"].getproxies,
      type(sys.modules["urllib.request"]).__name__)
"""


def test_a_deferred_module_is_the_real_one_at_its_first_read() -> None:
    out = subprocess.run([sys.executable, "-c", STAND_IN], capture_output=True, text=True,
                         check=True, cwd=REPO, timeout=60).stdout.split("\n")
    assert out[:3] == [
        "_Deferred False",
        f"module True {uuid.uuid5(uuid.NAMESPACE_DNS, 'tablectl')}",
        "True module",
    ]
