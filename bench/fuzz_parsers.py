"""Fuzz every parser that takes outside input, a million inputs each (issue 12), outside CI.

    .venv/bin/python bench/fuzz_parsers.py [--runs 1000000] [--only NAME ...] [--engine auto]
                                          [--jobs 1] [--artifacts DIR]

Engine: coverage-guided atheris (libFuzzer) when it imports (`pip install atheris`; wheels for
CPython 3.11 on x86-64), else a mutational fuzzer seeded from the same valid inputs. Each
parser runs in a child process of its own, seeded from valid messages and the shipped
configs. The property: no exception but the parser's documented error class, no input that
takes longer than --timeout seconds (a hang), memory within --rss-mb (RLIMIT_AS in the
mutational engine, libFuzzer's -rss_limit_mb under atheris). Prints inputs, inputs/s and
findings per parser; exit 1 if anything was found (the input is saved under --artifacts).
tests/test_fuzz_parsers.py runs hypothesis versions of the same properties in CI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import fuzz_seeds  # noqa: E402
from tests.fuzz_seeds import TABLE  # noqa: E402


@dataclass(frozen=True)
class Target:
    """`run` feeds one input to the parser and checks what comes back; `errors` are the
    exceptions the parser documents for bad input (anything else is a finding)."""

    run: Callable[[bytes], None]
    errors: tuple[type[BaseException], ...]
    seeds: Callable[[], list[bytes]]
    what: str


# -- the parsers -----------------------------------------------------------------------------
def _outbox(data: bytes) -> None:
    from shared.link import contract as c

    body = c.parse_outbox(data, TABLE)
    c.check_outbox_payload(body["type"], body["payload"])


def _outbox_messages(data: bytes) -> None:
    """A message on an outbox topic, single or a pack (issue 31): every row's payload checked,
    and each row's text, parsed alone, is that row (what head office stores for it)."""
    from shared.link import contract as c

    rows, _ = c.parse_outbox_messages(data, TABLE)
    for body, text in rows:
        c.check_outbox_payload(body["type"], body["payload"])
        if c.parse_outbox(text, TABLE) != body:
            raise AssertionError(f"a row's text is not the row: {text[:200]!r}")


def _ho_side(name: str) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        from shared.link import contract as c

        getattr(c, name)(data, TABLE)

    return run


def _topic(data: bytes) -> None:
    from shared.link import contract as c

    table, _leaf = c.table_of_topic(data.decode("utf-8", "replace"))
    assert c.TABLE_ID.fullmatch(table), table


def _pool(data: bytes) -> None:
    from shared.link import contract as c

    got = c.parse_pool(data)
    assert isinstance(got["amount"], int) and got["amount"] >= 0  # integer cents


def _award(data: bytes) -> None:
    from shared.link import contract as c

    got = c.parse_award(data, TABLE)
    assert all(isinstance(p["amount"], int) and p["amount"] >= 0 for p in got["payouts"])


def _chunks(data: bytes) -> list[bytes]:
    """The input cut where its first byte says, as a serial read would deliver it."""
    step = 1 + (data[0] % 64) if data else 1
    return [data[i:i + step] for i in range(0, len(data), step)]


def _frames(data: bytes) -> None:
    from devices.proto.framing import (
        MAX_FRAME,
        MAX_PAYLOAD,
        FrameDecoder,
        MessageError,
        parse_message,
    )

    dec = FrameDecoder()
    for part in _chunks(data):
        for frame in dec.feed(part):
            assert len(frame.payload) <= MAX_PAYLOAD
            with contextlib.suppress(MessageError):
                parse_message(frame.payload)
        assert dec.pending < MAX_FRAME  # the buffer stays bounded
    dec.flush()


def _message(data: bytes) -> None:
    from devices.proto.framing import parse_message

    verb, args = parse_message(data)
    assert verb.isalpha() and all(a and " " not in a for a in args)


def _alpha(data: bytes) -> None:
    from devices.proto.alpha import AlphaDecoder

    dec = AlphaDecoder()
    for part in _chunks(data):
        for packet in dec.feed(part):
            packet.text()
        assert len(dec.buffer) < 256  # bounded
    dec.flush()


_LOOP: asyncio.AbstractEventLoop | None = None


def _arq(data: bytes) -> None:
    """The ARQ link (devices/proto/arq.py) fed a stream, each chunk twice (a replay)."""
    from devices.proto.arq import FramedLink

    global _LOOP
    if _LOOP is None:  # the link arms its retransmit timer on the running loop
        _LOOP = asyncio.new_event_loop()
    delivered: list[bytes] = []

    async def feed() -> None:
        link = FramedLink(lambda _b: None, delivered.append, retransmit_s=10)
        for part in _chunks(data):
            link.data_received(part)
            link.data_received(part)
        assert link.counters["messages"] == len(delivered)
        link.close()

    _LOOP.run_until_complete(feed())


def _control(data: bytes) -> None:
    from controller.control import parse_request

    request = parse_request(data)
    assert isinstance(request["cmd"], str) and isinstance(request.get("args", {}), dict)


def _table_config(data: bytes) -> None:
    """What load_config does after reading the file (bytes that are not UTF-8 it refuses
    itself: tests/test_fuzz_parsers.py checks that)."""
    from controller.config import validate_text

    validate_text(data.decode("utf-8", "replace"))


def _ho_config(data: bytes) -> None:
    from headoffice.config import validate_text

    validate_text(data.decode("utf-8", "replace"))


def _errors(module: str, name: str) -> Callable[[], tuple[type[BaseException], ...]]:
    def get() -> tuple[type[BaseException], ...]:
        import importlib

        return (getattr(importlib.import_module(module), name),)

    return get


CONTRACT = ("shared.link.contract", "SchemaError")
TARGETS: dict[str, tuple[Callable[[bytes], None], tuple[str, str] | None,
                         Callable[[], list[bytes]], str]] = {
    "contract.parse_outbox": (_outbox, CONTRACT, fuzz_seeds.contract_seeds,
                              "head office: a table's outbox message and its payload"),
    "contract.parse_outbox_messages": (_outbox_messages, CONTRACT, fuzz_seeds.contract_seeds,
                                       "head office: a message on a table's outbox topic, single"
                                       " or a pack"),
    "contract.parse_birth": (_ho_side("parse_birth"), CONTRACT, fuzz_seeds.contract_seeds,
                             "head office: a table's birth message"),
    "contract.parse_status": (_ho_side("parse_status"), CONTRACT, fuzz_seeds.contract_seeds,
                              "head office: a table's status message"),
    "contract.table_of_topic": (_topic, CONTRACT, lambda: [
        b"tablectl/v1/table/T1/outbox", b"tablectl/v1/table/T-2/birth"],
        "head office: the topic a message came on"),
    "contract.parse_ack": (_ho_side("parse_ack"), CONTRACT, fuzz_seeds.contract_seeds,
                           "table: head office's ack"),
    "contract.parse_pool": (_pool, CONTRACT, fuzz_seeds.contract_seeds, "table: the pool value"),
    "contract.parse_award": (_award, CONTRACT, fuzz_seeds.contract_seeds, "table: a jackpot award"),
    "framing.FrameDecoder": (_frames, None, fuzz_seeds.frame_seeds,
                             "serial frames in chunks, each payload parsed"),
    "framing.parse_message": (_message, ("devices.proto.framing", "MessageError"), lambda: [
        b"HELLO v1", b"DICE 3 4 5", b"CARD AS 12"], "a serial message payload"),
    "alpha.AlphaDecoder": (_alpha, None, fuzz_seeds.alpha_seeds, "the Alpha sign's replies"),
    "arq.FramedLink": (_arq, None, fuzz_seeds.frame_seeds, "the ARQ link, every chunk replayed"),
    "control.parse_request": (_control, ("builtins", "ValueError"), fuzz_seeds.control_seeds,
                               "the control socket's request line"),
    "config.validate_text": (_table_config, ("controller.config", "ConfigError"),
                           fuzz_seeds.table_config_seeds, "the table's config file"),
    "headoffice.config": (_ho_config, ("headoffice.config", "HeadOfficeConfigError"),
                          fuzz_seeds.ho_config_seeds, "head office's config file"),
}


def target(name: str) -> Target:
    run, err, seeds, what = TARGETS[name]
    errors = _errors(*err)() if err else ()
    return Target(run, errors, seeds, what)


# -- engines ---------------------------------------------------------------------------------
TOKENS = [b'"', b"{", b"}", b"[", b"]", b",", b":", b"null", b"true", b"-1", b"0", b"1e999",
          b"NaN", b"Infinity", b"9" * 40, b"\x00", b"\xff", b"\\u0000", b"\\ud800", b"=", b"\n",
          b"[[", b"]]", b"'''", b'"""', b"inf", b"nan", b"0x7fffffffffffffff", b" ", b"\x7e",
          b"\x02", b"\x03", b"\x04", b"\x01", b"\x1b", b"1979-05-27T07:32:00Z"]


def mutate(rng: random.Random, data: bytes, corpus: list[bytes], max_len: int) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        i = rng.randint(0, len(b))
        if op == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 3 and b:
            del b[i:i + rng.randint(1, 16)]
        elif op == 4 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 32)]
        elif op == 5:
            other = rng.choice(corpus)
            j = rng.randint(0, len(other))
            b = b[:i] + bytearray(other[j:])
        elif op == 6:
            b[i:i] = rng.choice(TOKENS)
        else:
            b = b[:i]
    return bytes(b[:max_len])


class Hang(Exception):
    pass


def _alarm(_sig: int, _frame: object) -> None:
    raise Hang("input took longer than the timeout")


def mutational(t: Target, runs: int, timeout_s: float, rss_mb: int, seed: int,
               artifacts: Path, name: str) -> dict[str, object]:
    resource.setrlimit(resource.RLIMIT_AS, (rss_mb << 20, rss_mb << 20))
    signal.signal(signal.SIGALRM, _alarm)
    rng = random.Random(seed)
    seeds = t.seeds()
    warm_up(t, seeds)
    corpus = list(seeds)
    max_len = max(1024, 2 * max(map(len, seeds)))
    findings: list[str] = []
    start = time.perf_counter()
    for n in range(runs):
        data = mutate(rng, rng.choice(corpus), corpus, max_len)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            t.run(data)
            if len(corpus) < 5000 and n % 97 == 0:
                corpus.append(data)  # accepted inputs breed (no coverage: a sample of them)
        except t.errors:
            pass
        except BaseException as exc:  # a finding: anything else, a hang, MemoryError
            if isinstance(exc, KeyboardInterrupt):
                raise
            kind = f"{type(exc).__name__}: {exc}"[:200]
            if not any(f.startswith(kind[:60]) for f in findings):
                findings.append(kind)
                path = artifacts / f"{name}-{len(findings)}.bin"
                path.write_bytes(data)
                print(f"FINDING {name}: {kind} -> {path}\n{traceback.format_exc()}",
                      file=sys.stderr)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - start
    return {"target": name, "engine": "mutational", "inputs": runs, "seconds": round(elapsed, 1),
            "findings": findings,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def warm_up(t: Target, seeds: list[bytes]) -> None:
    """Each seed once, untimed: what a parser imports lazily (the UTH evaluator's tables take
    seconds to build) is not a hang."""
    for s in seeds:
        with contextlib.suppress(*t.errors):
            t.run(s)


def run_atheris(name: str, runs: int, timeout_s: float, rss_mb: int, artifacts: Path) -> None:
    """Never returns: libFuzzer exits when the runs are done or at the first finding."""
    import atheris

    # Instrumented for coverage: only modules imported inside this block, so before anything
    # else imports them.
    # tomllib stays uninstrumented: it tripled the time of a config input.
    with atheris.instrument_imports(include=["controller", "devices", "headoffice", "shared"]):
        t = target(name)
        seeds = t.seeds()
        warm_up(t, seeds)  # imports the parser's modules here, so they are instrumented
    corpus = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
    for i, s in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(s)

    def one(data: bytes) -> None:
        with contextlib.suppress(*t.errors):
            t.run(data)

    max_len = max(1024, 2 * max(map(len, seeds)))
    atheris.Setup([sys.argv[0], f"-runs={runs}", f"-timeout={max(1, int(timeout_s))}",
                   f"-rss_limit_mb={rss_mb}", f"-max_len={max_len}", "-print_final_stats=1",
                   f"-artifact_prefix={artifacts}/{name}-", str(corpus)], one)
    atheris.Fuzz()


def worker(args: argparse.Namespace) -> int:
    if args.engine == "atheris":
        run_atheris(args.worker, args.runs, args.timeout, args.rss_mb, args.artifacts)
        return 0
    t = target(args.worker)
    summary = mutational(t, args.runs, args.timeout, args.rss_mb, args.seed, args.artifacts,
                         args.worker)
    print("SUMMARY " + json.dumps(summary))
    return 1 if summary["findings"] else 0


def _atheris_summary(name: str, out: str, code: int, seconds: float) -> dict[str, object]:
    done = re.search(r"Done (\d+) runs in (\d+) second", out)
    execs = re.search(r"stat::number_of_executed_units: (\d+)", out)
    cov = re.findall(r"cov: (\d+)", out)
    rss = re.search(r"stat::peak_rss_mb:\s+(\d+)", out)
    findings = []
    if code != 0:
        m = re.search(r"=== Uncaught Python exception: ===\n(.*?)\n", out)
        kind = m.group(1) if m else None
        for marker in ("libFuzzer: timeout", "libFuzzer: out-of-memory"):
            if kind is None and marker in out:
                kind = marker.split(": ")[1]  # a hang, or memory past --rss-mb
        lines = out.strip().splitlines() or [""]
        findings.append(kind or f"the worker failed ({code}): {lines[-1][:200]}")
    # libFuzzer's own clock (whole seconds) when it finished; else the process's wall time.
    return {"target": name, "engine": "atheris",
            "inputs": int(execs.group(1)) if execs else int(done.group(1)) if done else None,
            "seconds": max(1, int(done.group(2))) if done else round(seconds, 1),
            "findings": findings, "coverage": int(cov[-1]) if cov else None,
            "max_rss_mb": int(rss.group(1)) if rss else None}


def _report(name: str, engine: str, code: int, out: str, seconds: float) -> dict[str, object]:
    if engine == "atheris":
        summary = _atheris_summary(name, out, code, seconds)
    else:
        line = next((x for x in out.splitlines() if x.startswith("SUMMARY ")), None)
        summary = json.loads(line[8:]) if line else {
            "target": name, "engine": engine, "inputs": None, "seconds": round(seconds, 1),
            "findings": [f"worker died ({code})"]}
    inputs, secs = summary["inputs"], summary["seconds"]
    rate = f"{inputs / secs:,.0f}/s" if inputs and secs else "-"  # type: ignore[operator]
    cov = f"  coverage {summary['coverage']} edges" if summary.get("coverage") else ""
    cov += f"  peak RSS {summary['max_rss_mb']} MB" if summary.get("max_rss_mb") else ""
    print(f"{name:31} {inputs or 0:>10,} inputs {secs:>7} s {rate:>9}{cov}"
          f"  findings: {summary['findings'] or 'none'}", flush=True)
    return summary


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1_000_000, help="inputs per parser")
    ap.add_argument("--only", nargs="*", choices=sorted(TARGETS), help="these parsers only")
    ap.add_argument("--engine", choices=["auto", "atheris", "mutational"], default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="parsers fuzzed at once")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds an input may take")
    ap.add_argument("--rss-mb", type=int, default=1024, help="memory a parser's process may use")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--artifacts", type=Path, default=Path("fuzz-artifacts"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.artifacts = args.artifacts.resolve()
    args.artifacts.mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(args)
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "mutational"
    names = args.only or sorted(TARGETS)
    print(f"engine {engine}, {args.runs:,} inputs per parser, {len(names)} parsers")
    results: list[dict[str, object]] = []
    running: list[tuple[str, subprocess.Popen[bytes], float, Path]] = []
    queue = list(names)
    while queue or running:
        while queue and len(running) < args.jobs:
            name = queue.pop(0)
            cmd = [sys.executable, __file__, "--worker", name, "--engine", engine,
                   "--runs", str(args.runs), "--timeout", str(args.timeout),
                   "--rss-mb", str(args.rss_mb), "--seed", str(args.seed),
                   "--artifacts", str(args.artifacts)]
            log = args.artifacts / f"{name}.log"  # a file, not a pipe: libFuzzer talks a lot
            with log.open("wb") as out:
                proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONPATH": str(REPO)})
            running.append((name, proc, time.perf_counter(), log))
        finished = [r for r in running if r[1].poll() is not None]
        if not finished:
            time.sleep(0.5)
            continue
        for item in finished:
            running.remove(item)
            name, proc, started, log = item
            results.append(_report(name, engine, proc.returncode, log.read_text(errors="replace"),
                                   time.perf_counter() - started))
    total = sum(int(r["inputs"] or 0) for r in results)  # type: ignore[call-overload]
    print(f"total {total:,} inputs, {sum(bool(r['findings']) for r in results)} parsers with"
          " findings")
    return 1 if any(r["findings"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
