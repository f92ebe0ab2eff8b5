"""The daemon's side of the control socket on a real Unix socket: a handler that goes wrong
still answers its client (controller/daemon/control.py), and the server goes on serving."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from controller.control import RequestRefused, request
from controller.daemon.control import ControlServer


def test_a_handler_whose_awaited_future_is_cancelled_still_answers(tmp_path: Path) -> None:
    # A future a handler awaits, cancelled by someone else (a device stopped under a self-test
    # cancelled its pending answer so): CancelledError reaches the handler though its request
    # was never cancelled. The client gets an error reply, not a closed connection.
    errors: list[str] = []

    async def cancelled(_args: dict[str, Any]) -> Any:
        fut = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(fut.cancel)
        return await fut

    async def status(_args: dict[str, Any]) -> Any:
        return {"up": True}

    async def go() -> tuple[str, Any]:
        server = ControlServer(tmp_path / "c.sock", {"dealer": cancelled, "status": status}, {},
                               on_error=errors.append)  # fmt: skip
        await server.start()
        try:
            try:
                await asyncio.to_thread(request, server.path, "dealer", {"action": "x"}, 10)
                refused = "answered"
            except RequestRefused as exc:
                refused = str(exc)
            after = await asyncio.to_thread(request, server.path, "status", None, 10)
        finally:
            await server.close()
        return refused, after

    refused, after = asyncio.run(asyncio.wait_for(go(), 30))
    assert refused == "internal error: CancelledError"
    assert after == {"up": True}
    assert errors == ["control command failed: CancelledError: "]
