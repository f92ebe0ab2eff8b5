"""The host side of the VM test (image/vm/test_vm.py): QEMU, its monitor, ssh into the guest,
the wire-level simulators behind the emulated USB serial adapters, Mosquitto and head office.

    guest = Guest(work, run)             # work: build.sh's output; run: this run's files
    guest.boot(); guest.ssh("systemctl is-active tablectld")
    guest.qmp("device_del", id="usb-shaker")
    guest.power_cut(); guest.boot()      # SIGKILL, the same disks
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
QEMU = "qemu-system-aarch64"
# The emulated adapters: QEMU's usb-serial is an FTDI FT232 (0403:6001); its `serial=` is the USB
# serial string the udev rules match (examples/vm-*.toml), `port=` a fixed xHCI root port.
ADAPTERS = {
    "shaker": ("VMSHK001", "1"),
    "shuffler": ("VMSHF001", "2"),
    "meter": ("VMMTR001", "3"),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Qmp:
    """QEMU's machine protocol over its unix socket: one command at a time, events skipped."""

    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""
        self._read()  # the greeting
        self.execute("qmp_capabilities")

    def _read(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QMP socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return dict(json.loads(line))

    def execute(self, command: str, **arguments: Any) -> Any:
        msg: dict[str, Any] = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise RuntimeError(f"QMP {command}: {reply['error']}")

    def close(self) -> None:
        self.sock.close()


class Guest:
    """One VM: the cached system disk behind a copy-on-write overlay (so the test can show the
    root was never written), the data partition image, the adapters' host ends."""

    def __init__(self, work: Path, run: Path, data_img: Path, serial_links: dict[str, Path],
                 dtb: Path | None = None) -> None:
        self.work, self.run, self.data_img = work, run, data_img
        self.serial_links = serial_links
        self.dtb = dtb
        self.bootfs: Path | None = None  # the Pi firmware's boot partition, for the A/B check
        # A raw disk for dm-log-writes to record the data partition's writes on (the flush-point
        # check); in the guest /dev/disk/by-id/virtio-tablectl-log.
        self.write_log: Path | None = None
        self.key = work / "id_ed25519"
        self.overlay = run / "system.qcow2"
        self.qmp_path = run / "qmp.sock"
        self.console = run / "console.log"
        self.ssh_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.boots: list[dict[str, float]] = []
        self.up = False  # ssh answered on this boot (its shared connections may be made)
        self.agents: dict[str, Agent] = {}  # by user, for this boot
        self.calls = {"ssh": 0, "ask": 0}  # round trips into the guest (results.json, per check)
        self.shutdowns: list[float] = []  # seconds from `systemctl poweroff` to QEMU's exit
        if not self.overlay.exists():
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                            str(work / "root.img"), str(self.overlay)], check=True)

    def command(self) -> list[str]:
        cmd = [
            QEMU, "-M", "virt", "-cpu", "cortex-a72", "-smp", "2", "-m", "1024",
            "-display", "none", "-monitor", "none", "-no-reboot",
            "-serial", f"file:{self.console}",
            "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
            "-kernel", str(self.work / "vmlinuz"), "-initrd", str(self.work / "initrd.img"),
            "-append", "root=/dev/vda ro rootfstype=ext4 console=ttyAMA0 panic=-1",
            "-drive", f"if=none,id=system,file={self.overlay},format=qcow2",
            "-device", "virtio-blk-pci,drive=system",
            "-drive", f"if=none,id=data,file={self.data_img},format=raw",
            "-device", "virtio-blk-pci,drive=data",
            "-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{self.ssh_port}-:22",
            "-device", "virtio-net-pci,netdev=net0",
            "-device", "qemu-xhci,id=xhci",
        ]
        if self.write_log is not None:
            cmd += ["-drive", f"if=none,id=writelog,file={self.write_log},format=raw",
                    "-device", "virtio-blk-pci,drive=writelog,serial=tablectl-log"]
        if self.bootfs is not None:
            cmd += ["-drive", f"if=none,id=bootfs,file={self.bootfs},format=raw",
                    "-device", "virtio-blk-pci,drive=bootfs"]
        if self.dtb is not None:
            cmd += ["-dtb", str(self.dtb)]
        for name, link in self.serial_links.items():
            cmd += ["-chardev", f"serial,id=ch-{name},path={link}"]
            cmd += ["-device", self.adapter(name)]
        return cmd

    @staticmethod
    def adapter(name: str) -> str:
        serial, port = ADAPTERS[name]
        return f"usb-serial,id=usb-{name},bus=xhci.0,port={port},chardev=ch-{name},serial={serial}"

    def boot(self, timeout: float = 300) -> dict[str, float]:
        """Start QEMU and wait for ssh; the boot's timings (seconds)."""
        assert self.proc is None or self.proc.poll() is not None
        with contextlib.suppress(FileNotFoundError):
            self.qmp_path.unlink()
        self.up = False  # (a reboot the guest made itself ends a boot without power_cut/shutdown)
        self._close_agents()
        self._close_masters()
        started = time.monotonic()
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=(self.run / "qemu.err").open("a"))
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"QEMU exited {self.proc.returncode}: "
                                   f"{(self.run / 'qemu.err').read_text()[-2000:]}"
                                   f"\n{self.console_tail()}")
            try:  # QEMU's forwarded port accepts before sshd answers: a slow guest hangs ssh
                r = self.ssh("true", timeout=30, check=False)
            except subprocess.TimeoutExpired:
                continue
            if r.returncode == 0:
                timing = {"ssh_s": time.monotonic() - started}
                self.boots.append(timing)
                self.up = True
                return timing
            time.sleep(2)
        raise TimeoutError(f"no ssh within {timeout} s\n{self.console_tail()}")

    def console_tail(self, n: int = 60) -> str:
        if not self.console.exists():
            return ""
        return "\n".join(self.console.read_text(errors="replace").splitlines()[-n:])

    def _ssh_args(self, user: str, shared: bool = True, master: str = "no") -> list[str]:
        """ssh to the guest as `user`, through this boot's shared connection for that user
        when there is one: a new connection costs a key exchange and a login in the guest (over
        a second of TCG each), a session on an open one only the command. With no master (not
        yet made, or gone with its boot) ssh connects on its own. (ssh takes an option's first
        value: hence the arguments, not options appended after.)"""
        return ["ssh", "-q", "-i", str(self.key), "-p", str(self.ssh_port),
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                "-o", f"ControlPath={self._control_path(user) if shared else 'none'}",
                "-o", f"ControlMaster={master}", f"{user}@127.0.0.1"]

    def _control_path(self, user: str) -> Path:
        # One per boot: a master of an earlier boot (its QEMU gone) is never asked.
        return self.run / f"ssh-{len(self.boots)}-{user}.sock"

    def _master(self, user: str) -> None:
        """The boot's shared connection for `user` (ssh -M, in the background until the boot
        ends or `_close_masters`); where it cannot be made, each command connects by itself."""
        if self.proc is None or self.proc.poll() is not None or self._control_path(user).exists():
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            subprocess.run([*self._ssh_args(user, master="yes")[:-1], "-o", "ControlPersist=yes",
                            "-f", "-N", f"{user}@127.0.0.1"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)

    def _close_masters(self) -> None:
        for path in self.run.glob("ssh-*.sock"):
            subprocess.run(["ssh", "-q", "-o", f"ControlPath={path}", "-O", "exit", "x"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
            path.unlink(missing_ok=True)

    def ssh(self, command: str, *, user: str = "root", timeout: float = 120,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        if self.up:  # booted (ssh answered): share a connection
            self._master(user)
        self.calls["ssh"] += 1
        r = subprocess.run([*self._ssh_args(user), command],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"guest: {command!r} as {user} -> {r.returncode}\n"
                                 f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        return r

    def ask(self, cmd: str, args: dict[str, Any] | None = None, *, user: str = "tech",
            timeout: float = 60) -> dict[str, Any] | None:
        """A control-socket request as `user` through this boot's agent (AGENT)."""
        self.calls["ask"] += 1
        agent = self.agents.get(user)
        if agent is None or not agent.alive():
            if self.up:
                self._master(user)
            agent = self.agents[user] = Agent(self, user)
        return agent.ask(cmd, args, timeout=timeout)

    def _close_agents(self) -> None:
        for agent in self.agents.values():
            agent.close()
        self.agents.clear()

    def scp_from(self, remote: str, local: Path) -> None:
        subprocess.run(
            ["scp", "-q", "-r", "-i", str(self.key), "-P", str(self.ssh_port),
             "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", f"ControlPath={self._control_path('root')}", "-o", "ControlMaster=no",
             f"root@127.0.0.1:{remote}", str(local)], check=True, timeout=120,
        )

    def scp_to(self, local: Path, remote: str) -> None:
        subprocess.run(
            ["scp", "-q", "-i", str(self.key), "-P", str(self.ssh_port),
             "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", f"ControlPath={self._control_path('root')}", "-o", "ControlMaster=no",
             str(local), f"root@127.0.0.1:{remote}"], check=True, timeout=120,
        )

    def qmp(self, command: str, **arguments: Any) -> Any:
        q = Qmp(self.qmp_path)
        try:
            return q.execute(command, **arguments)
        finally:
            q.close()

    def power_cut(self) -> None:
        """SIGKILL QEMU: the table loses power, no shutdown of any kind."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.up = False
        self._close_agents()
        self._close_masters()

    def shutdown(self, timeout: float = 120) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        started = time.monotonic()
        self.ssh("systemctl poweroff", check=False, timeout=20)
        self.up = False
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.power_cut()
        self._close_agents()
        self._close_masters()
        self.shutdowns.append(round(time.monotonic() - started, 1))

    def diagnostics(self) -> str:
        """What a failed check prints: the guest's journal tail and unit states."""
        out = []
        for cmd in ("journalctl -b --no-pager | grep -v -e sshd -e pam_ | tail -200",
                    "systemctl status --no-pager tablectld tablectl-headoffice | head -60",
                    "systemctl --failed --no-pager"):
            r = self.ssh(cmd, check=False, timeout=60)
            out.append(f"$ {cmd}\n{r.stdout}{r.stderr}")
        return "\n".join(out)


# The guest side of `Guest.ask`: one Python process for the whole boot answering control-socket
# requests line by line, so that polling the table's status costs a socket round trip, not a
# `tablectl` start (6.5-9 s of TCG each: the interpreter and the CLI's imports).
AGENT = """
import json, socket, sys
for line in sys.stdin:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(20)
            s.connect("/run/tablectl/control.sock")
            s.sendall(line.encode())
            data = b""
            while not data.endswith(b"\\n"):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data) if data.strip() else {"ok": False, "error": "closed, no answer"}
    except (OSError, ValueError) as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""


class Agent:
    """AGENT over one ssh session as `user` (the control socket's permission is the user's)."""

    def __init__(self, guest: Guest, user: str) -> None:
        self.guest, self.user = guest, user
        code = base64.b64encode(AGENT.encode()).decode()
        self.proc = subprocess.Popen(
            [*guest._ssh_args(user), f'python3 -u -c "$(echo {code} | base64 -d)"'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""

    def ask(self, cmd: str, args: dict[str, Any] | None = None, timeout: float = 60
            ) -> dict[str, Any] | None:
        """The daemon's reply ({"ok": ..., "result"|"error": ...}); None when the agent is
        gone or did not answer within `timeout` (it is then ended: the next ask makes one)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps({"cmd": cmd, "args": args or {}}).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            self.close()
            return None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.close()
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return dict(json.loads(line))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


class Simulators:
    """The wire-level simulators (devices/pty_sim.py) on host ptys, one process, behind the
    symlinks QEMU's `-chardev serial` opens."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.links = {name: run / f"{name}.pty" for name in ADAPTERS}
        self.log = run / "pty_sim.log"
        args = [sys.executable, "-m", "devices.pty_sim", "--cut-die", "--decks", "2"]
        for name, link in self.links.items():
            args += [f"--{name}", str(link)]
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=self.log.open("w"),
                                     stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 20
        while not all(p.exists() for p in self.links.values()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pty_sim did not start: {self.log.read_text()}")
            time.sleep(0.1)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        return self.log.read_text()


def make_data_partition(src: Path, img: Path, size_mb: int = 512) -> None:
    """The data partition (/persistent) as an ext4 image of `src`, no loop mount needed."""
    subprocess.run(["mkfs.ext4", "-q", "-L", "persistent", "-d", str(src), str(img),
                    f"{size_mb}M"], check=True)


def tool(name: str) -> str | None:
    return shutil.which(name)


def tryboot_dtb(path: Path, partition: int) -> Path:
    """QEMU virt's device tree with what the Pi firmware adds on a tryboot: /chosen/bootloader
    {tryboot = <1>; partition = <N>;} (big-endian cells, read by tablectl-slot)."""
    subprocess.run([QEMU, "-M", f"virt,dumpdtb={path}", "-cpu", "cortex-a72", "-smp", "2",
                    "-m", "1024", "-display", "none"], check=True, capture_output=True)
    subprocess.run(["fdtput", "-c", str(path), "/chosen/bootloader"], check=True)
    subprocess.run(["fdtput", "-t", "u", str(path), "/chosen/bootloader", "tryboot", "1"],
                   check=True)
    subprocess.run(["fdtput", "-t", "u", str(path), "/chosen/bootloader", "partition",
                    str(partition)], check=True)
    return path


def autoboot(committed: int, tried: int) -> str:
    """autoboot.txt as tablectl-slot writes it."""
    return (f"[all]\ntryboot_a_b=1\nboot_partition={committed}\n"
            f"[tryboot]\nboot_partition={tried}\n")


def make_bootfs(img: Path, files: dict[str, str], size_mb: int = 16) -> None:
    """The Pi firmware's boot partition: FAT labelled `bootfs` holding `files`, made with
    mkfs.vfat and filled with mtools (no loop mount)."""
    img.unlink(missing_ok=True)
    subprocess.run(["mkfs.vfat", "-n", "bootfs", "-C", str(img), str(size_mb * 1024)],
                   check=True, capture_output=True)
    for name, text in files.items():
        src = img.parent / f"{img.name}.{name}"
        src.write_text(text)
        subprocess.run(["mcopy", "-i", str(img), str(src), f"::/{name}"], check=True)
        src.unlink()


def bootfs_files(img: Path) -> dict[str, str]:
    """Every file in the FAT image's root and its text (mtools; no mount)."""
    names = subprocess.run(["mdir", "-b", "-i", str(img), "::/"], capture_output=True,
                           text=True, check=True).stdout.split()
    return {n.removeprefix("::/"): subprocess.run(
        ["mtype", "-i", str(img), n], capture_output=True, text=True, check=True).stdout
        for n in names}


def fat_clean(img: Path) -> subprocess.CompletedProcess[str]:
    """fsck.vfat's read-only check of the image (exit 0: no error found)."""
    return subprocess.run(["fsck.vfat", "-n", str(img)], capture_output=True, text=True)
