"""Our interface to an MQTT v5 broker, implemented with aiomqtt 2.x (which wraps paho-mqtt).

The rest of the link and head office see only `BrokerSettings`, `connect()`, `Connection` and
`LinkError`, so a change of MQTT library stays in this file. aiomqtt does not reconnect by
itself: callers loop over `connect()` with `Backoff`. Both programs use it (shared/): the
table's link (controller/link/) and head office's worker. Importing it changes nothing of
paho's; `share_paho_properties()` is head office's speed-up of paho's receive path, asked for
by the worker (headoffice/worker.py), never by the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import select
import socket
import ssl
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared import lazy_import

# paho imports these at its top; without PySocks it never reads urllib.request, and uuid only
# for a client given no id: ~2.3 MB of a linked table, loaded if ever read (shared/lazy_import.py).
if not lazy_import.installed("socks"):
    lazy_import.defer("urllib.request")
lazy_import.defer("uuid")

import aiomqtt  # noqa: E402
import paho.mqtt.client as mqtt  # noqa: E402
from paho.mqtt.packettypes import PacketTypes  # noqa: E402
from paho.mqtt.properties import Properties  # noqa: E402

from shared.errors import TablectlError  # noqa: E402
from shared.stopping import cancel_and_wait  # noqa: E402


class LinkError(TablectlError):
    """The broker is unreachable, refused us, or the connection dropped."""


@dataclass(frozen=True)
class Tls:
    ca: Path
    cert: Path | None = None  # client certificate authentication (one per table)
    key: Path | None = None


@dataclass(frozen=True)
class Will:
    topic: str
    payload: bytes
    retain: bool = True


@dataclass(frozen=True)
class BrokerSettings:
    host: str
    port: int
    client_id: str
    tls: Tls | None = None
    username: str | None = None
    password: str | None = None
    keepalive_s: int = 10  # a dead TCP link is noticed in ~1.5 keepalives
    session_expiry_s: int = 24 * 3600  # the broker keeps our subscriptions and queued QoS 1
    will: Will | None = None
    timeout_s: float = 10.0
    max_inflight: int = 64  # QoS 1 publishes awaiting PUBACK inside paho


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    retain: bool


class Connection:
    """One live session with the broker (inside `async with connect(settings)`)."""

    def __init__(self, client: aiomqtt.Client) -> None:
        self._client = client

    async def publish(
        self,
        topic: str,
        payload: bytes,
        *,
        qos: int = 1,
        retain: bool = False,
        expiry_s: int | None = None,
        timeout_s: float | None = None,
    ) -> None:
        """Returns when the broker has the message (PUBACK for QoS 1); LinkError otherwise,
        in which case the outcome is unknown and the caller must be ready to send it again."""
        props = None
        if expiry_s is not None:
            props = Properties(PacketTypes.PUBLISH)
            props.MessageExpiryInterval = expiry_s
        try:
            await self._client.publish(
                topic, payload, qos=qos, retain=retain, properties=props, timeout=timeout_s
            )
        except aiomqtt.MqttError as exc:
            raise LinkError(f"publish to {topic}: {exc}") from None

    def publish_nowait(self, topic: str, payload: bytes) -> None:
        """QoS 0, queued behind what is already queued and written with it on the event
        loop's next pass, not waited for: lost if the connection drops (QoS 0 may be lost
        anyway). aiomqtt's `publish` waits even at QoS 0, registering a pending call whose
        check walks every pending call twice: head office's acks, a batch's hundreds at
        once, cost O(n^2) (bench/fleet at 500 tables: 1.2 M steps for 5,000 acks). paho's
        own `publish` (the client aiomqtt wraps, its `_client`, aiomqtt 2.x pinned < 3)."""
        try:
            info = self._client._client.publish(topic, payload, qos=0)
        except ValueError as exc:  # paho refuses a topic or payload it cannot send
            raise LinkError(f"publish to {topic}: {exc}") from None
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            raise LinkError(f"publish to {topic}: {mqtt.error_string(info.rc)}")

    async def subscribe(self, topics: list[str], qos: int = 1) -> None:
        try:
            granted = await self._client.subscribe([(t, qos) for t in topics])
        except aiomqtt.MqttError as exc:
            raise LinkError(f"subscribe: {exc}") from None
        for topic, code in zip(topics, granted, strict=False):
            value = getattr(code, "value", code)
            if isinstance(value, int) and value >= 0x80:
                raise LinkError(f"subscribe to {topic} refused by the broker ({code})")

    async def unsubscribe(self, topics: list[str]) -> None:
        """Stop a subscription (one not held is no error: MQTT answers 'none existed')."""
        try:
            await self._client.unsubscribe(topics)
        except aiomqtt.MqttError as exc:
            raise LinkError(f"unsubscribe: {exc}") from None

    async def messages(self) -> AsyncIterator[Message]:
        """Incoming messages until the connection drops (then LinkError)."""
        # aiomqtt's iterator makes a task and an asyncio.wait per message: three passes of the
        # event loop each. Whatever else is already queued is taken straight from its queue
        # (an aiomqtt 2.x internal, hence the getattr), and the iterator only waits for more.
        queue = getattr(self._client, "_queue", None)
        try:
            async for m in self._client.messages:
                yield _message(m)
                while queue is not None and not queue.empty():
                    yield _message(queue.get_nowait())
        except aiomqtt.MqttError as exc:
            raise LinkError(f"connection lost: {exc}") from None


# Packets read per wake-up of the event loop at most, so the loop's other tasks get a turn.
_READS_PER_WAKE = 256


class _Client(aiomqtt.Client):
    """aiomqtt's client, with a reader that takes every packet waiting on the socket.

    aiomqtt's reader handles one TLS record (one MQTT packet, as Mosquitto writes them) per
    pass of the event loop, so head office draining a fleet's burst went round the loop once
    per message: a quarter of its receive time (bench/fleet: 99 -> 76 us of CPU a message).
    This reader calls paho's `loop_read()` again while the socket holds more: bytes TLS has
    already decrypted, or bytes in the kernel's buffer (a zero-timeout poll). It overrides
    aiomqtt's `_on_socket_open` (an internal of aiomqtt 2.x, pinned < 3); if a later 2.x drops
    it, `_READER_OVERRIDE` is False and the plain reader runs: slower, not wrong.
    """

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        # paho calls this with the new socket before it sends CONNECT. TCP_NODELAY: a small
        # packet (a PUBACK, an ack, a pool value) goes out now, not after Nagle's wait for the
        # peer's ACK (with delayed ACKs, ~40 ms per hop: an 89 ms floor lock -> meter).
        with contextlib.suppress(OSError, AttributeError):  # AttributeError: not a TCP socket
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super()._on_socket_open(client, userdata, sock)
        fd = sock.fileno()
        waiting = select.poll()
        waiting.register(fd, select.POLLIN)
        pending = getattr(sock, "pending", None)  # TLS: decrypted bytes not yet read

        def read() -> None:
            try:
                for _ in range(_READS_PER_WAKE):
                    client.loop_read()
                    if client.socket() is not sock:
                        return  # closed meanwhile: aiomqtt's disconnect handling has it
                    if (pending is None or pending() == 0) and not waiting.poll(0):
                        return
            except Exception as exc:  # as aiomqtt's own reader: the connection is broken
                disconnected = getattr(self, "_disconnected", None)
                if disconnected is None:
                    raise  # not the aiomqtt this was written for: let the loop report it
                if not disconnected.done():
                    disconnected.set_exception(exc)

        # Scheduled after aiomqtt's own add_reader, so this one replaces it.
        self._loop.call_soon_threadsafe(self._loop.add_reader, fd, read)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        # aiomqtt makes its own Message and validates a Topic for every packet, which
        # `messages()` then turned into ours: 0.6 s of the 1.5 s paho's on-message path took
        # for 20,000 messages in head office's profile (issue 17). Ours goes on aiomqtt's queue
        # directly; a topic that is not UTF-8 (or a payload that is not bytes) takes aiomqtt's
        # path, unchanged.
        payload = message.payload
        try:
            topic = message.topic
        except UnicodeDecodeError:
            topic = None
        if topic is None or not isinstance(payload, bytes):
            super()._on_message(client, userdata, message)
            return
        try:
            self._queue.put_nowait(Message(topic, payload, bool(message.retain)))
        except asyncio.QueueFull:
            self._logger.warning("Message queue is full. Discarding message.")


_READER_OVERRIDE = callable(getattr(aiomqtt.Client, "_on_socket_open", None))


class _SharedProperties(Properties):
    """paho's MQTT v5 `Properties`, made cheaply. paho makes one for every packet it reads,
    and its constructor builds two tables of ~27 entries each time, then `unpack` clears ~27
    attributes that a new object cannot have: ~20 % of head office's receive CPU (issue 17).
    Here the tables are made once and shared (paho only reads them), and a packet with no
    properties, as the tables' messages are, is read without the clearing. Anything else
    (properties present, setting one) is paho's own code, unchanged."""

    _template = Properties(PacketTypes.PUBLISH)
    types = _template.types
    names = _template.names
    properties = _template.properties

    def __init__(self, packetType: int) -> None:
        object.__setattr__(self, "packetType", packetType)

    def unpack(self, buffer: bytes | bytearray) -> tuple[Properties, int]:
        if buffer[:1] == b"\x00":  # property length 0: nothing to read
            return self, 1
        return super().unpack(buffer)


def share_paho_properties() -> bool:
    """Let paho's packet decoder (paho-mqtt 2.x's `_packet`, an internal) make
    `_SharedProperties`, for every client in this process from now on: True when it does.
    False, and paho's own class stays, if the internal is not there or holds a class neither
    paho's nor ours. Never done at import: only a program that asks for it (head office's
    worker, headoffice/worker.py, and the bench measuring what head office reads with) has
    paho's internals changed; a table's link reads with paho as it is."""
    try:
        from paho.mqtt import _packet
    except ImportError:
        return False
    current = getattr(_packet, "Properties", None)
    if current is _SharedProperties:
        return True
    if current is not Properties:
        return False
    _packet.Properties = _SharedProperties  # type: ignore[misc]
    return True


def _message(m: aiomqtt.Message | Message) -> Message:
    if type(m) is Message:  # put there by _Client._on_message
        return m
    payload = m.payload if isinstance(m.payload, bytes) else str(m.payload).encode()
    return Message(m.topic.value, payload, bool(m.retain))


def _client(s: BrokerSettings) -> aiomqtt.Client:
    connect_props = Properties(PacketTypes.CONNECT)
    connect_props.SessionExpiryInterval = s.session_expiry_s
    tls_context = None
    if s.tls is not None:
        tls_context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(s.tls.ca))
        tls_context.minimum_version = ssl.TLSVersion.TLSv1_2
        if s.tls.cert is not None:
            tls_context.load_cert_chain(str(s.tls.cert), str(s.tls.key) if s.tls.key else None)
    will = None
    if s.will is not None:
        will = aiomqtt.Will(s.will.topic, s.will.payload, qos=1, retain=s.will.retain)
    return (_Client if _READER_OVERRIDE else aiomqtt.Client)(
        s.host,
        s.port,
        identifier=s.client_id,
        username=s.username,
        password=s.password,
        protocol=aiomqtt.ProtocolVersion.V5,
        # Never a clean start: the broker keeps the session (subscriptions, queued QoS 1
        # messages) across our reconnects and restarts, for session_expiry_s.
        clean_start=False,
        properties=connect_props,
        keepalive=s.keepalive_s,
        timeout=s.timeout_s,
        will=will,
        tls_context=tls_context,
        max_inflight_messages=s.max_inflight,
    )


@contextlib.asynccontextmanager
async def connect(settings: BrokerSettings) -> AsyncIterator[Connection]:
    """Connect (LinkError if that fails); on leaving, disconnect cleanly if still connected."""
    try:
        client = _client(settings)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise LinkError(f"cannot set up the MQTT client: {exc}") from None
    try:
        await client.__aenter__()
    except aiomqtt.MqttError as exc:
        raise LinkError(f"connect to {settings.host}:{settings.port}: {exc}") from None
    except (OSError, ssl.SSLError) as exc:
        raise LinkError(f"connect to {settings.host}:{settings.port}: {exc}") from None
    try:
        yield Connection(client)
    finally:
        with contextlib.suppress(aiomqtt.MqttError, OSError, RuntimeError):
            await client.__aexit__(None, None, None)


class Backoff:
    """Exponential backoff with full jitter (AWS architecture blog): a fleet of tables that
    lost the broker together does not reconnect in lockstep."""

    def __init__(self, base_s: float = 0.2, cap_s: float = 30.0, rng: random.Random | None = None):
        self.base_s = base_s
        self.cap_s = cap_s
        self.attempt = 0
        self.rng = rng or random.Random()

    def next_delay(self) -> float:
        delay = self.rng.uniform(0, min(self.cap_s, self.base_s * 2**self.attempt))
        self.attempt = min(self.attempt + 1, 30)
        return delay

    def reset(self) -> None:
        self.attempt = 0


async def run_together(*coros: Coroutine[Any, Any, None]) -> None:
    """Run the loops of one connection side by side in a TaskGroup; the first to fail (a
    dropped connection) cancels the others and its exception is raised, not a group, so the
    callers' `except LinkError` (reconnect quietly) still tells the network from a bug.

    The group alone is not enough on Python 3.11: it cancels each task once and then waits,
    and a task that swallows that one cancel (`asyncio.wait_for` can, gh-86296; aiomqtt waits
    for every PUBACK with it) leaves the group waiting forever. So before the group waits the
    tasks are ended by `cancel_and_wait` (shared/stopping.py), which cancels again until each
    has ended, and keeps doing so even when the caller itself is cancelled meanwhile (the
    daemon's stop during a reconnect), then passes that cancellation on."""
    tasks: list[asyncio.Task[None]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coros]
            try:
                await asyncio.wait(tasks)
            finally:  # a task failed (the group cancels us), or we were cancelled
                await cancel_and_wait(tasks)
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
