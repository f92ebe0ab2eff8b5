"""`tablectl devices ...`: the technician's view of the table's hardware, through the daemon.

    tablectl devices list [--json]              health, counters, last error of every device
    tablectl devices test DEVICE [--json]       shake once / deck check / flash the meter /
                                                live inputs; no game event is emitted
    tablectl devices watch [--json] [--interval S]   device events as they happen, inputs live
    tablectl devices fault DEVICE FAULT [VALUE] inject a fault (tablectld --simulate=pty only)
    tablectl devices input NAME on|off          press/release a mock input (simulation only)
    tablectl devices udev [--config FILE]       the udev rules for the configured USB ids

The device service tests, between rounds only (docs/operations.md "Device service tests"); each
takes --wait [S]: asked during a round, run at the next gap (up to S seconds):
    tablectl devices lamps [--step-ms N]        light each jackpot lamp alone in turn, the
                                                game's lamps held meanwhile, then as it wants
    tablectl devices buttons [INPUT ...] [--timeout S]   press each input when asked
    tablectl devices loopback DEVICE|--port PATH [--baud N] [--timeout-ms N]
                                                a pattern through a loopback plug
Exit status: 0 passed, 1 failed (the report says what was seen), 2 refused (a round in
progress, another test running, a bad argument), 3 tablectld not running.

The CLI never opens hardware: everything but `udev` asks the daemon over its control socket.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from controller.cli.attention import attention_lines, counters_text, state_text
from controller.cli.common import emit
from controller.cli.show import event_args, tree_lines
from controller.cli.table_cmd import EXIT_NOT_RUNNING, _ask, refusal_text, socket_path
from controller.config import DEFAULT_PATH, ConfigError, load_config
from controller.control import NotRunning, request
from shared.errors import InputError

MAX_LAMPS = 8  # one per box at most: how long a lamp walk may take
DEFAULT_WAIT_S = 300  # `--wait` alone: a round's worth and more
MAX_WAIT_S = 600  # the daemon's bound (controller/extensions/service_menu.py MAX_WAIT_S)


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
    lamps = add("lamps", "lamp walk: light each jackpot lamp alone in turn (between rounds)",
                cmd_lamps)  # fmt: skip
    lamps.add_argument("--step-ms", type=int, default=500, help="how long each lamp is lit")
    btn = add("buttons", "guided button test: press each input when asked (between rounds)",
              cmd_buttons)  # fmt: skip
    btn.add_argument("inputs", nargs="*", help="only these inputs (default: every wired one)")
    btn.add_argument("--timeout", type=int, default=30, help="seconds to wait for each press")
    lb = add("loopback", "serial loopback test through a loopback plug (between rounds)",
             cmd_loopback)  # fmt: skip
    lb.add_argument("device", nargs="?", help="shaker, shuffler or meter: its port")
    lb.add_argument("--port", help="another serial port, by path")
    lb.add_argument("--baud", type=int, default=None, help="with --port (default 115200)")
    lb.add_argument("--timeout-ms", type=int, default=1000, help="wait for the echo this long")
    for p in (lamps, btn, lb):
        p.add_argument("--wait", type=int, nargs="?", const=DEFAULT_WAIT_S, default=0,
                       metavar="S", help="a round in progress: wait up to S seconds (default"
                       f" {DEFAULT_WAIT_S}) for it to end and run the test then")
    udev = dsub.add_parser("udev", help="udev rules giving the serial devices stable names")
    udev.add_argument("--config", type=Path, default=Path(DEFAULT_PATH))
    udev.set_defaults(func=cmd_udev)


def cmd_list(args: argparse.Namespace) -> int:
    devices = _ask(args, "device_list")
    att = _ask(args, "status").get("attention") if not args.json else None

    def human() -> str:
        lines = []
        for name, d in devices.items():
            where = d.get("port") or ""
            sim = " (pty simulator)" if d.get("simulated") else ""
            lines.append(f"{name:<9} {state_text(d)} {d['driver']} {where}{sim}")
            lines.append(f"          counters: {counters_text(d['counters'])}")
            if d.get("last_error"):
                lines.append(f"          last error: {d['last_error']}")
        return "\n".join(lines + attention_lines(att))

    emit(devices, args.json, human)
    return 0 if all(d["ok"] for d in devices.values()) else 1


def cmd_test(args: argparse.Namespace) -> int:
    report = _ask(args, "device_test", {"device": args.device})
    result = report["result"]

    def human() -> str:
        head = f"{report['device']}: test {'OK' if result.get('ok') else 'FAILED'}"
        return "\n".join([head, *tree_lines({k: v for k, v in result.items() if k != "ok"})])

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
                        f"{event_args(item['event']['data']) or '-'} -> {effects or '-'}",
                        flush=True,
                    )
                if view["inputs"] != last_inputs:
                    print(f"inputs {inputs_text(view['inputs'].get('state') or {})}",
                          flush=True)
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


def inputs_text(state: dict[str, Any]) -> str:
    """The sensors' inputs in words: `chung 1, 3; off none; bet none; table_open yes`."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, list):
            return ", ".join(map(str, v)) or "none"
        return str(v)
    return "; ".join(f"{k} {value(v)}" for k, v in state.items()) or "-"


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


# --- device service tests -----------------------------------------------------------------------


def _ask_long(args: argparse.Namespace, cmd: str, payload: dict[str, Any], wait_s: float) -> Any:
    """`_ask` for a test that takes a while: the answer may come `wait_s` seconds later (and
    `--wait`'s seconds more, waiting for the round in progress to end)."""
    waiting = getattr(args, "wait", 0) or 0
    if not 0 <= waiting <= MAX_WAIT_S:
        raise InputError(f"--wait must be within 0..{MAX_WAIT_S} seconds, got {waiting}")
    if waiting:
        payload = {**payload, "wait_s": waiting}
    try:
        return request(socket_path(args), cmd, payload, timeout=wait_s + waiting + 10)
    except NotRunning as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_NOT_RUNNING) from None
    except RuntimeError as exc:
        raise InputError(refusal_text(args, cmd, str(exc))) from None


def _verdict(result: dict[str, Any]) -> str:
    return "OK" if result.get("ok") else f"FAILED: {result.get('error') or 'see above'}"


def cmd_lamps(args: argparse.Namespace) -> int:
    walk = _ask_long(args, "device_lamp_walk", {"step_ms": args.step_ms},
                     MAX_LAMPS * args.step_ms / 1000)  # fmt: skip

    def human() -> str:
        lines = ["lamp walk: each lamp lit alone in turn, the lamps held from the game"]
        for step in walk["steps"]:
            lit = ", ".join(map(str, step["lit"])) or "none"
            mark = "ok" if step["ok"] else f"WRONG: lamps lit {lit}"
            lines.append(f"  lamp {step['box']} (GPIO{step['pin']}): {mark}")
        back = ", ".join(f"{b} {state}" for b, state in walk["restored"].items())
        lines.append(f"  lamps after: {back}"
                     f"{'' if walk['restored_ok'] else ' (NOT as the game wants them)'}")
        lines.append(f"  the game's lamps were held during the walk: {walk.get('held_writes', 0)}"
                     " lamp changes it asked for meanwhile were applied after")
        if walk.get("waited_s"):
            lines.append(f"  (waited {walk['waited_s']} s for the round in progress to end)")
        lines.append(f"lamp walk {_verdict(walk)}")
        return "\n".join(lines)

    emit(walk, args.json, human)
    return 0 if walk["ok"] else 1


def cmd_buttons(args: argparse.Namespace) -> int:
    wired = _ask(args, "device_buttons")["inputs"]
    names = [i["input"] for i in wired]
    unknown = [n for n in args.inputs if n not in names]
    if unknown:
        raise InputError(f"no input {unknown[0]!r} (inputs: {', '.join(names) or 'none'})")
    chosen = [i for i in wired if not args.inputs or i["input"] in args.inputs]
    say = sys.stderr if args.json else sys.stdout  # --json: stdout is the report alone
    results = []
    for inp in chosen:
        print(f"{inp['prompt']} (GPIO{inp['pin']}) ... ", end="", file=say, flush=True)
        r = _ask_long(args, "device_button_wait",
                      {"input": inp["input"], "timeout_s": args.timeout}, args.timeout)  # fmt: skip
        seen = f" (also seen: {', '.join(r['seen'])})" if r["seen"] else ""
        print(f"{'ok' if r['ok'] else 'FAILED: ' + r['error']}{seen}", file=say, flush=True)
        results.append(r)
    ok = all(r["ok"] for r in results)
    report = {"ok": ok, "results": results}
    emit(report, args.json, lambda: f"button test: {sum(r['ok'] for r in results)} of"
         f" {len(results)} inputs ok")  # fmt: skip
    return 0 if ok else 1


def cmd_loopback(args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {"timeout_ms": args.timeout_ms}
    if args.device is not None:
        payload["device"] = args.device
    if args.port is not None:
        payload["port"] = args.port
    if args.baud is not None:
        payload["baud"] = args.baud
    r = _ask_long(args, "device_loopback", payload, args.timeout_ms / 1000)

    def human() -> str:
        who = f"{r['device']} " if r.get("device") else ""
        return "\n".join([
            f"loopback {who}{r['port']} at {r['baud']} baud: {r['received']} of {r['sent']}"
            " bytes back",
            f"  sent     {r.get('sent_hex', '')}",
            f"  received {r.get('received_hex', '') or '(nothing)'}",
            f"loopback {_verdict(r)}",
        ])  # fmt: skip

    emit(r, args.json, human)
    return 0 if r["ok"] else 1


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
