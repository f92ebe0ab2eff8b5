"""`tablectl devices ...`: the technician's view of the table's hardware, through the daemon.

    tablectl devices list [--json]              health, counters, last error of every device
    tablectl devices test DEVICE [--json]       shake once / deck check / flash the meter /
                                                live inputs; no game event is emitted
    tablectl devices watch [--json] [--interval S]   device events as they happen, inputs live
    tablectl devices fault DEVICE FAULT [VALUE] inject a fault (tablectld --simulate=pty only)
    tablectl devices input NAME on|off          press/release a mock input (simulation only)
    tablectl devices udev [--config FILE]       the udev rules for the configured USB ids

The CLI never opens hardware: everything but `udev` asks the daemon over its control socket.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.table_cmd import EXIT_NOT_RUNNING, _ask
from controller.config import DEFAULT_PATH, ConfigError, load_config
from controller.control import NotRunning
from controller.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    dev = sub.add_parser("devices", help="device health, tests and live view")
    dsub = dev.add_subparsers(dest="devices_command", required=True, parser_class=type(dev))

    def add(name: str, help_: str, func: Any) -> argparse.ArgumentParser:
        p = dsub.add_parser(name, help=help_)
        p.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
        return p

    add("list", "health, counters and last error of every device", cmd_list)
    test = add("test", "exercise one device (no game event)", cmd_test)
    test.add_argument("device", help="shaker, shuffler, meter, sensors, rng")
    watch = add("watch", "device events and input states, live", cmd_watch)
    watch.add_argument("--interval", type=float, default=0.5, help="seconds between looks")
    watch.add_argument("--count", type=int, default=0, help="stop after N looks (0: never)")
    fault = add("fault", "inject a fault into a pty simulator (--simulate=pty)", cmd_fault)
    fault.add_argument("device")
    fault.add_argument("fault", help="no_answer, drop, corrupt, delay, not_flat, jam, ...")
    fault.add_argument("value", nargs="?", default=None)
    inp = add("input", "press (on) or release (off) a mock GPIO input", cmd_input)
    inp.add_argument("input", help="e.g. chung3, bet_sensor2, keypad.shake, table_closed")
    inp.add_argument("level", choices=["on", "off"])
    udev = dsub.add_parser("udev", help="udev rules giving the serial devices stable names")
    udev.add_argument("--config", type=Path, default=Path(DEFAULT_PATH))
    udev.set_defaults(func=cmd_udev)


def _counters(counters: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(counters.items()) if v) or "-"


def state_text(d: dict[str, Any]) -> str:
    """A device's state as `tablectl status` and `tablectl devices list` both print it, from
    the same `Device.status()` answer: `disconnected FAULT`, `ready        ok   `."""
    return f"{d['state']:<12} {'ok' if d['ok'] else 'FAULT':<5}"


def cmd_list(args: argparse.Namespace) -> int:
    devices = _ask(args, "device_list")

    def human() -> str:
        lines = []
        for name, d in devices.items():
            where = d.get("port") or ""
            sim = " (pty simulator)" if d.get("simulated") else ""
            lines.append(f"{name:<9} {state_text(d)} {d['driver']} {where}{sim}")
            lines.append(f"          counters: {_counters(d['counters'])}")
            if d.get("last_error"):
                lines.append(f"          last error: {d['last_error']}")
        return "\n".join(lines)

    emit(devices, args.json, human)
    return 0 if all(d["ok"] for d in devices.values()) else 1


def cmd_test(args: argparse.Namespace) -> int:
    report = _ask(args, "device_test", {"device": args.device})
    result = report["result"]

    def human() -> str:
        head = f"{report['device']}: test {'OK' if result.get('ok') else 'FAILED'}"
        rest = {k: v for k, v in result.items() if k != "ok"}
        return "\n".join([head, *(f"  {k}: {json.dumps(v)}" for k, v in rest.items())])

    emit(report, args.json, human)
    return 0 if result.get("ok") else 1


def cmd_watch(args: argparse.Namespace) -> int:
    since = 0
    looks = 0
    last_inputs: Any = None
    try:
        first = _ask(args, "device_watch", {"since": 0})
        since = first["cursor"]  # live from now; the past is in `tablectl journal tail`
        while True:
            view = _ask(args, "device_watch", {"since": since})
            since = view["cursor"]
            if args.json:
                print(json.dumps(view), flush=True)
            else:
                for item in view["events"]:
                    effects = ", ".join(
                        f"{e['kind']}:{e['data'].get('command') or e['data'].get('mode') or ''}"
                        for e in item["effects"]
                    )
                    print(
                        f"{item['utc']} {item['event']['kind']} "
                        f"{json.dumps(item['event']['data'])} -> {effects or '-'}",
                        flush=True,
                    )
                if view["inputs"] != last_inputs:
                    print(f"inputs {json.dumps(view['inputs'].get('state'))}", flush=True)
                    for name, p in (view["inputs"].get("pins") or {}).items():
                        if p.get("active") or p.get("problem"):
                            extra = f" {p['problem'].upper()}" if p.get("problem") else ""
                            print(f"  {name} (GPIO{p['pin']}) active{extra}", flush=True)
                    last_inputs = view["inputs"]
            looks += 1
            if args.count and looks >= args.count:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
    except NotRunning as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNING


def cmd_fault(args: argparse.Namespace) -> int:
    payload = {"device": args.device, "fault": args.fault, "value": args.value}
    result = _ask(args, "device_fault", payload)
    said = " ".join(str(x) for x in (args.device + ":", args.fault, args.value) if x)
    emit(result, args.json, lambda: f"{said} injected")
    return 0


def cmd_input(args: argparse.Namespace) -> int:
    result = _ask(args, "device_input", {"input": args.input, "active": args.level})
    emit(result, args.json, lambda: f"{args.input} {args.level}")
    return 0


def cmd_udev(args: argparse.Namespace) -> int:
    from devices.errors import DeviceError
    from devices.udev import rules

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        raise InputError("; ".join(exc.errors)) from None
    except OSError as exc:
        raise InputError(f"{args.config}: {exc}") from None
    try:
        text = rules(cfg.devices)
    except DeviceError as exc:  # a port name or serial number a rule cannot hold
        raise InputError(str(exc)) from None
    sys.stdout.write(text)
    return 0
