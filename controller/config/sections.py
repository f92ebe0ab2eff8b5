"""The table's own sections: `[service]` (paths, groups, watchdog), `[link]` (head office) and
`[cards]` (carded play, issue 29)."""

from __future__ import annotations

import re

from controller.config.model import LinkConfig, ServiceConfig, TlsConfig
from controller.config.reader import MISSING, Table
from controller.rounds.cards import ALLOWANCE, REFUSE, CardsConfig

POOL_TIMEOUT_S = (0.1, 300.0)  # link.pool_timeout_s: bounds of a finite number of seconds
_CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GROUP = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.:-]{0,252}[A-Za-z0-9])?")


def read_service(root: Table) -> ServiceConfig:
    t = root.table("service")
    if t is None:
        return ServiceConfig()
    d = ServiceConfig()
    cfg = ServiceConfig(
        state_dir=t.path_("state_dir", d.state_dir),
        runtime_dir=t.path_("runtime_dir", d.runtime_dir),
        socket_group=t.string(
            "socket_group", d.socket_group, pattern=_GROUP, what="a Unix group name"
        ),
        watchdog=t.boolean("watchdog", d.watchdog),
        tech_group=t.string("tech_group", d.tech_group, pattern=_GROUP, what="a Unix group name"),
        super_group=t.string(
            "super_group", d.super_group, pattern=_GROUP, what="a Unix group name"
        ),
        development=t.boolean("development", d.development),
    )
    if cfg.tech_group is not None and cfg.tech_group == cfg.super_group:
        t.error("super_group", "must differ from tech_group (read-only and acting roles)")
    t.done()
    return cfg


def read_link(root: Table, table_id: str | None) -> LinkConfig:
    t = root.table("link")
    client_default = f"tablectl-{table_id or ''}"
    if t is None:
        return LinkConfig(client_id=client_default)
    enabled = t.boolean("enabled", False)
    host = t.string("host", MISSING if enabled else None, pattern=_HOST, what="a host name")
    tls = None
    tt = t.table("tls")
    if tt is not None:
        tls = TlsConfig(ca=tt.path_("ca"), cert=tt.path_("cert", None), key=tt.path_("key", None))  # type: ignore[arg-type]
        if (tls.cert is None) != (tls.key is None):
            tt.error("key", "cert and key go together (client certificate authentication)")
        tt.done()
    port = t.integer("port", 8883 if tls else 1883, lo=1, hi=65535)
    username = t.string(
        "username", None, pattern=re.compile(r"[!-~]{1,128}"), what="printable ASCII"
    )
    password_file = t.path_("password_file", None)
    if password_file is not None and username is None:
        t.error("password_file", "needs a username")
    cfg = LinkConfig(
        enabled=enabled,
        host=host,
        port=port,
        tls=tls,
        username=username,
        password_file=password_file,
        pool_timeout_s=t.seconds("pool_timeout_s", 5.0, lo=POOL_TIMEOUT_S[0], hi=POOL_TIMEOUT_S[1]),
        client_id=t.string(
            "client_id", client_default, pattern=_CLIENT_ID, what="1-64 of A-Z a-z 0-9 _ -"
        ),
    )
    t.done(
        hints={
            "password": "secrets never go in this file: put it in a file readable only"
            " by the service and set password_file"
        }
    )
    return cfg


ANSWER_S = (0.1, 60.0)  # cards.answer_s: how long a card's answer may take, in seconds


DEPARTURE = ("[cards] required = false: wagers are taken without a Player Card, a departure"
             " from NSW Pai Gow 9.1, 16.1 / UTH 13.1 (configured)")


def read_cards(root: Table, *, profile_requires: bool, link: LinkConfig,
               simulated: bool) -> CardsConfig:
    """[cards]: `required` defaults to the profile's rule (NSW Pai Gow 9.1, 16.1; UTH 13.1; NZ
    and ACT Pai Gow have none), linked or not. A linked table asks head office's patron service;
    a standalone simulated table (`simulated`) has the simulated patron service (demo cards, no
    Loss Limit); a real standalone table has none and refuses every wager saying why, unless
    `required = false` is written, which is logged at start as a departure (`departure`).
    """
    t = root.table("cards")
    default = profile_requires
    if t is None:
        return CardsConfig(required=default, local=not link.enabled, simulated=simulated)
    required = t.boolean("required", default)
    answer_s = t.seconds("answer_s", 2.0, lo=ANSWER_S[0], hi=ANSWER_S[1])
    offline = t.string("offline", REFUSE, choices=[REFUSE, ALLOWANCE])
    allowance = t.cents("offline_allowance", 0, positive=False)
    if offline == ALLOWANCE and not allowance:
        t.error("offline_allowance", 'required (cents > 0) with offline = "allowance"')
    t.done()
    departure = DEPARTURE if profile_requires and required is False else None
    return CardsConfig(required=bool(required), local=not link.enabled,
                       answer_ms=int((answer_s or 2.0) * 1000), offline=offline or REFUSE,
                       offline_allowance=allowance or 0, simulated=simulated,
                       departure=departure)
