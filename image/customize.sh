#!/bin/sh
# Install tablectl into a root filesystem: the one step shared by the image build
# (rpi-image-gen's layer image/layer/tablectl.yaml runs it as a customize hook) and the slow
# test (image/test_image.py, through mmdebstrap). Runs on the build host, as root.
#
#   image/customize.sh ROOT
#
# Environment:
#   TABLECTL_WHEEL        the tablectl wheel to install (default: built from this checkout)
#   TABLECTL_SIGNING_KEY  ed25519 private key (PEM) that signs the manifest; required for a
#                         release. Without it a throwaway key is made and the image is marked
#                         UNSIGNED-DEV in its manifest version (never ship that).
#   TABLECTL_PYTHON       host python with `cryptography` (default: python3)
#   TABLECTL_BUILD_INFO   the build record (image/buildrecord.py info: commit, SOURCE_DATE_EPOCH,
#                         packages, wheel lock) to install as share/tablectl/build.json, signed
#                         into the manifest; `tablectl --version` shows its id. Optional.
#   SOURCE_DATE_EPOCH     when set (image/vm/build.sh sets it from the commit), the .pyc files
#                         pip writes are checked-hash (py_compile's default then) and the
#                         manifest's built_utc is that time: the same bytes from build to build.
set -eu

ROOT=$(realpath "${1:?usage: customize.sh ROOT}")
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
PY=${TABLECTL_PYTHON:-python3}
VENV=/opt/tablectl
SHARE=$VENV/share/tablectl
in_root() { chroot "$ROOT" "$@"; }

# 1. The packages (the same list the test builds from).
pkgs=$(grep -v '^\s*#' "$HERE/packages.txt" | grep -v '^\s*$' | tr '\n' ' ')
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $pkgs

# 2. The overlay: journald cap, chrony, the writeback sysctls, the data-partition state
#    directory, A/B health check.
cp -a "$HERE/overlay/." "$ROOT/"
chmod 0755 "$ROOT/usr/local/sbin/tablectl-slot"

# 3. The program: a venv under /opt, from a wheel (the build never installs a checkout).
wheel=${TABLECTL_WHEEL:-}
if [ -z "$wheel" ]; then
    out=$(mktemp -d)
    "$PY" -m pip wheel -q --no-deps -w "$out" "$REPO"
    wheel=$(ls "$out"/tablectl-*.whl)
fi
# The build host fetches the wheels for the target (its own registry settings, no network
# needed inside the root, and the same route for a native and a binfmt/qemu build); the root
# installs them offline. Binary wheels only: nothing is compiled on the image.
wh="$ROOT/tmp/tablectl-install"
mkdir -p "$wh"
cp "$wheel" "$wh/"
arch=$(in_root dpkg --print-architecture)
case "$arch" in
    arm64) march=aarch64 ;;
    amd64) march=x86_64 ;;
    *) echo "customize.sh: unsupported architecture $arch" >&2; exit 1 ;;
esac
# The dependencies are pinned with their hashes, one lock per architecture (image/lock.sh
# makes them; image/README.md "Pinned wheels"): nothing unpinned or unchecked reaches the image.
lock="$HERE/requirements-$march.lock"
[ -f "$lock" ] || { echo "customize.sh: no $lock (image/lock.sh)" >&2; exit 1; }
pyver=$(in_root python3 -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
[ "$pyver" = 311 ] || { echo "customize.sh: the locks are for CPython 3.11, the root has $pyver" >&2; exit 1; }
cp "$lock" "$wh/requirements.lock"
# pip's --platform takes exact tags, no older glibc implied: name every manylinux the root's
# glibc 2.36 runs (lgpio 0.2.2.0 for aarch64 is manylinux_2_34 only).
plats=""
for v in $(seq 36 -1 17); do plats="$plats --platform manylinux_2_${v}_$march"; done
# shellcheck disable=SC2086
"$PY" -m pip download -q --disable-pip-version-check -d "$wh" --only-binary=:all: \
    --require-hashes --implementation cp --python-version "$pyver" --abi "cp$pyver" $plats \
    --platform "manylinux2014_$march" --platform "linux_$march" --platform any -r "$lock"
in_root python3 -m venv "$VENV"
pipi() { in_root env -u PIP_FIND_LINKS -u PIP_CERT "$VENV/bin/pip" install -q --no-cache-dir \
    --disable-pip-version-check --no-index --find-links /tmp/tablectl-install "$@"; }
# Every dependency from the lock, each wheel checked against its hash; then the program built
# from this checkout, which has nothing left to resolve. pip check: the lock satisfies it.
pipi --require-hashes -r /tmp/tablectl-install/requirements.lock
pipi --no-deps /tmp/tablectl-install/"$(basename "$wheel")"
in_root "$VENV/bin/pip" check --disable-pip-version-check
# journald's native protocol (controller/logs.py): Debian's python3-systemd (packages.txt),
# built for this interpreter against the image's libsystemd, rather than systemd-python from
# PyPI (an sdist: a compiler and libsystemd-dev on the image, or a cross-build). Exactly that
# one package is made visible to the venv, by a .pth naming a directory that holds only a link
# to it; --system-site-packages would expose every Debian Python package. Both the link and
# Debian's files are in the signed manifest (step 5).
site=$(in_root "$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mkdir -p "$ROOT$VENV/lib/debian-systemd"
ln -sfn /usr/lib/python3/dist-packages/systemd "$ROOT$VENV/lib/debian-systemd/systemd"
echo "$VENV/lib/debian-systemd" >"$ROOT$site/debian-systemd.pth"
in_root "$VENV/bin/python" -c 'from systemd.journal import JournalHandler'
rm -rf "$wh"
# pip compiled the .pyc files; the root is read-only, so none is ever written again.
mkdir -p "$ROOT$SHARE/doc"
cp "$REPO/docs/operations.md" "$REPO/docs/verification.md" "$ROOT$SHARE/doc/"
if [ -n "${TABLECTL_BUILD_INFO:-}" ]; then
    install -m 0644 "$TABLECTL_BUILD_INFO" "$ROOT$SHARE/build.json"
fi
# An installed table: tablectld never plays unverified here (controller/extensions/verify.py).
: >"$ROOT$SHARE/installed"
mkdir -p "$ROOT/usr/share/doc/tablectl"
ln -sfn "$SHARE/doc/operations.md" "$ROOT/usr/share/doc/tablectl/operations.md"
for tool in tablectl tablectld; do ln -sfn "$VENV/bin/$tool" "$ROOT/usr/local/bin/$tool"; done

# 4. systemd: the units, the account, the directories, the udev names; enabled.
install -m 0644 "$REPO/systemd/tablectld.service" "$REPO/systemd/tablectl-headoffice.service" \
    "$REPO/systemd/tablectl-journal-key.service" "$ROOT/etc/systemd/system/"
install -D -m 0644 "$REPO/systemd/sysusers.d/tablectl.conf" "$ROOT/usr/lib/sysusers.d/tablectl.conf"
install -D -m 0644 "$REPO/systemd/tmpfiles.d/tablectl.conf" "$ROOT/usr/lib/tmpfiles.d/tablectl.conf"
for rules in "$REPO"/systemd/*.rules; do
    [ -e "$rules" ] && install -D -m 0644 "$rules" "$ROOT/etc/udev/rules.d/$(basename "$rules")"
done
in_root systemd-sysusers
in_root systemd-tmpfiles --create --prefix=/etc/tablectl --prefix=/var/lib/tablectl --prefix=/persistent
# The per-table configuration lives on the data partition; the read-only root points at it.
ln -sfn /persistent/etc/tablectl/table.toml "$ROOT/etc/tablectl/table.toml"
# So does the table's journal key: made there on the first boot (tablectl-journal-key.service),
# never in the image, which is the same on every table.
ln -sfn /persistent/etc/tablectl/journal-key "$ROOT/etc/tablectl/journal-key"
# Examples beside it, one per game: copy one to /persistent/etc/tablectl/table.toml and edit.
# Each with the image's second high-water mark (image/outside-mark.toml: the directory is made
# by tmpfiles and is the daemon's to write by the unit's drop-in).
cat "$REPO/examples/paigow-nsw.toml" "$REPO/image/outside-mark.toml" >"$ROOT/etc/tablectl/table.toml.example"
cat "$REPO/examples/uth-nsw.toml" "$REPO/image/outside-mark.toml" >"$ROOT/etc/tablectl/uth-nsw.toml.example"
chmod 0644 "$ROOT/etc/tablectl/table.toml.example" "$ROOT/etc/tablectl/uth-nsw.toml.example"
# The persistent journal lives on the data partition, shared by both slots and kept across
# an update: /var/log/journal is a link to it (the flush drop-in in the overlay makes the
# directory before journald moves the boot's logs there).
rm -rf "$ROOT/var/log/journal"
ln -sfn /persistent/log/journal "$ROOT/var/log/journal"
systemctl --root="$ROOT" enable tablectld.service tablectl-health.service chrony.service
# The table is a table, not the head office.
systemctl --root="$ROOT" disable tablectl-headoffice.service 2>/dev/null || true
# No swap, ever (Raspberry Pi OS bookworm would use dphys-swapfile).
systemctl --root="$ROOT" mask swap.target dphys-swapfile.service

# 5. The signed manifest of the installed program (docs/verification.md).
key=${TABLECTL_SIGNING_KEY:-}
version=$(in_root "$VENV/bin/python" -c 'from importlib.metadata import version; print(version("tablectl"))')
if [ -z "$key" ]; then
    keydir=$(mktemp -d)
    key=$keydir/dev-signing.pem
    PYTHONPATH="$REPO" "$PY" -m controller.verify keygen --private "$key" --public "$keydir/dev.pub" >/dev/null
    version="$version+UNSIGNED-DEV"
    echo "customize.sh: no TABLECTL_SIGNING_KEY: signed with a throwaway key ($version)" >&2
fi
"$PY" - "$key" "$ROOT$SHARE/manifest-signing.pub" <<'PYEOF'
import sys
from pathlib import Path
from cryptography.hazmat.primitives import serialization
key = serialization.load_pem_private_key(Path(sys.argv[1]).read_bytes(), password=None)
Path(sys.argv[2]).write_bytes(key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
PYEOF
cat >"$ROOT$SHARE/verification.toml" <<TOML
# Written by image/customize.sh: the daemon verifies the program against this manifest at start.
manifest = "$SHARE/manifest.json"
signature = "$SHARE/manifest.json.sig"
public_key = "$SHARE/manifest-signing.pub"
TOML
includes="--include opt/tablectl --include usr/bin/python3.11 --include usr/lib/python3.11"
includes="$includes --include usr/lib/python3/dist-packages/systemd"
for f in etc/systemd/system/tablectld.service etc/systemd/system/tablectld.service.d \
    etc/systemd/system/systemd-journal-flush.service.d etc/systemd/journald.conf.d/tablectl.conf \
    etc/sysctl.d/60-tablectl-writeback.conf \
    etc/systemd/system/tablectl-headoffice.service etc/systemd/system/tablectl-health.service \
    etc/systemd/system/tablectl-journal-key.service etc/systemd/system/tablectl-journal-key.service.d \
    usr/lib/sysusers.d/tablectl.conf usr/lib/tmpfiles.d/tablectl.conf \
    usr/lib/tmpfiles.d/tablectl-image.conf usr/local/sbin/tablectl-slot; do
    includes="$includes --include $f"
done
for rules in "$ROOT"/etc/udev/rules.d/*tablectl*; do
    [ -e "$rules" ] && includes="$includes --include ${rules#"$ROOT"/}"
done
# shellcheck disable=SC2086
PYTHONPATH="$REPO" "$PY" -m controller.verify build --root "$ROOT" $includes \
    --exclude "${SHARE#/}/manifest.json" --exclude "${SHARE#/}/manifest.json.sig" \
    --version "$version" --out "$ROOT$SHARE/manifest.json"
PYTHONPATH="$REPO" "$PY" -m controller.verify sign "$ROOT$SHARE/manifest.json" --key "$key"
