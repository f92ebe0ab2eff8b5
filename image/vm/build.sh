#!/bin/bash
# Build the table's arm64 root for the VM (image/vm/README.md): the product part with the
# image's own recipe (image/customize.sh, unchanged) in mmdebstrap, the VM layer (layer.sh) on
# a copy of it, then the system disk (ext4) and the kernel and initramfs to boot it with.
#
#   image/vm/build.sh [WORK]    (default image/vm/work; root; the Debian and PyPI registries)
#
# Out: WORK/root.img, WORK/vmlinuz, WORK/initrd.img, WORK/id_ed25519 (the test's ssh key),
# and the build record beside them (docs/verification.md, "Rebuilding the image"): base.tar
# (the product root, canonical tar), packages.lock (every .deb with version and sha256),
# build.json (installed in the image and signed into its manifest), manifest.json(.sig) (the
# image's signed manifest, copied out), build-record.json(.sig) (build.json plus every
# artifact's sha256, signed with the manifest's key).
# Reproducible (issue 32): the same commit and inputs give the same bytes: every time is
# SOURCE_DATE_EPOCH (default: the commit's time), the filesystem's UUID and hash seed derive
# from the commit. Inputs a lab must hold the same: the mirror's content (TABLECTL_MIRROR: the
# snapshot.debian.org archive at the date packages.lock names), TABLECTL_PACKAGES_LOCK (refuse
# any other package version), TABLECTL_SIGNING_KEY,
# and for the VM layer WORK/id_ed25519.pub and WORK/ssh_host_ed25519_key.
# Cache: WORK/base (the product root) is rebuilt only when the product's inputs change
# (WORK/base.sha256), root.img only when those or the VM layer's change (WORK/inputs.sha256).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=$(mkdir -p "${1:-$HERE/work}" && cd "${1:-$HERE/work}" && pwd)
PY=${TABLECTL_PYTHON:-$REPO/.venv/bin/python}
MIRROR=${TABLECTL_MIRROR:-http://deb.debian.org/debian}
t0=$SECONDS
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct)}
commit=$(git -C "$REPO" rev-parse HEAD)
# A build from uncommitted changes says so in its record: its bytes are not the commit's.
[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ] || commit="$commit-dirty"
rec="$PY $REPO/image/buildrecord.py"
lock=${TABLECTL_PACKAGES_LOCK:-}
if [ -n "$lock" ]; then
    lock=$(realpath "$lock")
    [ -f "$lock" ] || { echo "vm-build: TABLECTL_PACKAGES_LOCK=$lock: no such file" >&2; exit 2; }
fi
phase() { echo "vm-build: $1 ($((SECONDS - t0)) s)" >&2; }
# The hash of files' paths and contents, from the current directory or the repository.
digest() { find "$@" \( -type f -o -type l \) ! -name '*.pyc' -print0 | sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-64; }
digest_repo() { (cd "$REPO" && digest "$@"); }
# No time in the tree later than SOURCE_DATE_EPOCH (files written during the build: postinsts,
# pip, the recipe): the ones before it (from the .debs) stay as packaged.
clamp() { find "$1" -newermt "@$SOURCE_DATE_EPOCH" -print0 | xargs -0r touch -h -d "@$SOURCE_DATE_EPOCH"; }
# A tree as a tar in one order with only what the tree says: sorted names, numeric owners, no
# atime/ctime, mtimes clamped, xattrs (file capabilities) kept.
canonical_tar() {
    tar -C "$1" --sort=name --numeric-owner --format=posix --xattrs --xattrs-include='*' \
        --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
        --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime -cf "$2" .
}
# The build record is signed with the manifest's key (TABLECTL_SIGNING_KEY). Without one,
# customize.sh signed with a throwaway key it did not keep: the record is then unsigned, and
# says nothing a lab could check a signature of.
sign_record() {
    if [ -n "${TABLECTL_SIGNING_KEY:-}" ]; then
        # ed25519 over the file's bytes, as `controller.verify sign` signs a manifest.
        PYTHONPATH="$REPO" "$PY" -c 'import sys; from pathlib import Path
from controller.verify.keys import load_private_key, sign
data = Path(sys.argv[1]).read_bytes()
Path(sys.argv[1] + ".sig").write_bytes(sign(data, load_private_key(Path(sys.argv[2]))))' \
            "$1" "$TABLECTL_SIGNING_KEY"
    else
        rm -f "$1.sig"
        phase "no TABLECTL_SIGNING_KEY: $(basename "$1") is not signed"
    fi
}

# binfmt_misc: run the root's arm64 programs (dpkg scripts, venv, pip) under qemu-user.
if [ "$(uname -m)" != aarch64 ]; then
    [ -e /proc/sys/fs/binfmt_misc/register ] ||
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
        grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
        phase "registered qemu-aarch64 with binfmt_misc"
    fi
fi

[ -f "$WORK/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C tablectl-vm-test -f "$WORK/id_ed25519"
# The VM's sshd host key: an input like the test's key (openssh-server's postinst makes random
# ones, which would make every build's bytes differ).
[ -f "$WORK/ssh_host_ed25519_key" ] ||
    ssh-keygen -q -t ed25519 -N '' -C tablectl-vm-host -f "$WORK/ssh_host_ed25519_key"

# The recipe as the table image gets it, except one file: the VM's three USB serial adapters are
# all FT232s (QEMU's usb-serial, 0403:6001), so the udev rules are the ones `tablectl devices
# udev` makes from the VM's configs (told apart by USB serial string), as
# systemd/99-tablectl-serial.rules says a table with other adapters does. customize.sh installs
# them and signs them into the manifest like the shipped file.
recipe=$WORK/recipe
rm -rf "$recipe"
mkdir -p "$recipe"
(cd "$REPO" && cp -a --parents image/customize.sh image/packages.txt image/overlay image/outside-mark.toml \
    $(ls image/*.lock image/lock.sh 2>/dev/null) systemd controller devices headoffice shared \
    pyproject.toml setup.py docs/operations.md docs/verification.md examples "$recipe/")
# The VM's own table configs are not part of the product (the udev rules below come from them).
find "$recipe" -name __pycache__ -prune -exec rm -rf {} +
rm -f "$recipe"/examples/vm-*.toml
{
    "$PY" -m controller.cli.main devices udev --config "$REPO/examples/vm-paigow.toml"
    "$PY" -m controller.cli.main devices udev --config "$REPO/examples/vm-uth.toml" |
        sed -n '/^# shuffler/,/^# meter/p' | grep -v '^# meter'
} >"$recipe/systemd/99-tablectl-serial.rules"
# The product root is made from: the staged recipe (with the program's sources), the VM's
# extra packages and initramfs settings, and the mmdebstrap command below (its text).
mmdebstrap_cmd='mmdebstrap --mode=root --arch=arm64 --variant=minbase'
base_inputs=$(cd "$WORK" && { digest recipe; digest_repo image/vm/packages.txt image/vm/initramfs;
    echo "$mmdebstrap_cmd"; digest_repo image/buildrecord.py; cat "$lock" 2>/dev/null || true; } |
    sha256sum | cut -c1-64)
inputs="$base_inputs $(digest_repo image/vm/layer.sh image/vm/overlay image/vm/build.sh) $(cat "$WORK/id_ed25519.pub" "$WORK/ssh_host_ed25519_key" | sha256sum | cut -c1-64)"
if [ -f "$WORK/root.img" ] && [ "$(cat "$WORK/inputs.sha256" 2>/dev/null)" = "$inputs" ]; then
    phase "root.img is up to date (inputs $inputs): reused"
    exit 0
fi
rm -f "$WORK/inputs.sha256" "$WORK/root.img"

if [ ! -d "$WORK/base" ] || [ "$(cat "$WORK/base.sha256" 2>/dev/null)" != "$base_inputs" ]; then
    rm -f "$WORK/base.sha256"
    rm -rf "$WORK/base"
    wheels=$WORK/wheel
    rm -rf "$wheels" "$WORK/src"
    # From a copy: building in the checkout rewrites its build/ and tablectl.egg-info, which
    # the unit suite reads while `.ci/run` builds this beside it.
    mkdir -p "$WORK/src"
    (cd "$REPO" && cp -a pyproject.toml setup.py README.md controller devices headoffice shared "$WORK/src/")
    find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
    "$PY" -m pip wheel -q --no-deps -w "$wheels" "$WORK/src"
    rm -rf "$WORK/src"
    wheel=$(ls "$wheels"/tablectl-*.whl)
    phase "recipe staged, wheel $(basename "$wheel")"
    pkgs=$(cat "$REPO/image/packages.txt" "$HERE/packages.txt" | grep -v '^\s*#' |
        grep -v '^\s*$' | paste -sd,)
    # The VM's initramfs settings go in before the kernel (its postinst builds the initramfs).
    # Before image/customize.sh: the package lock (while apt's indexes are in the root; with
    # TABLECTL_PACKAGES_LOCK, a different package refuses the build) and the build record
    # customize.sh installs and signs. After it: what differs from build to build goes (the
    # host's resolv.conf and hostname, which mmdebstrap copies in; random ssh host keys; the
    # mirror's URL in sources.list: a lab builds from a snapshot.debian.org URL).
    $mmdebstrap_cmd --include="$pkgs" \
        --essential-hook="mkdir -p \"\$1/etc/initramfs-tools\" && cp -a $HERE/initramfs/. \"\$1/etc/initramfs-tools/\"" \
        --customize-hook="$rec debs \"\$1\" --out $WORK/packages.lock ${lock:+--lock $lock}" \
        --customize-hook="$rec info --commit $commit --epoch $SOURCE_DATE_EPOCH --packages-lock $WORK/packages.lock --file tablectl-wheel=$wheel --file requirements-aarch64.lock=$recipe/image/requirements-aarch64.lock --out $WORK/build.json" \
        --customize-hook="SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH TABLECTL_BUILD_INFO=$WORK/build.json TABLECTL_WHEEL=$wheel TABLECTL_PYTHON=$PY $recipe/image/customize.sh \"\$1\"" \
        --customize-hook="rm -f \"\$1\"/etc/resolv.conf \"\$1\"/etc/ssh/ssh_host_* && echo tablectl >\"\$1\"/etc/hostname" \
        --customize-hook="echo 'deb http://deb.debian.org/debian bookworm main' >\"\$1\"/etc/apt/sources.list" \
        bookworm "$WORK/base" "$MIRROR"
    clamp "$WORK/base"
    echo "$base_inputs" >"$WORK/base.sha256"
    phase "product root built (mmdebstrap + image/customize.sh)"
fi

canonical_tar "$WORK/base" "$WORK/base.tar"
phase "base.tar (the product root, canonical)"

root=$WORK/root
rm -rf "$root"
cp -a "$WORK/base" "$root"
VM_AUTHORIZED_KEY=$(cat "$WORK/id_ed25519.pub") "$HERE/layer.sh" "$root"
# VM only: the host key (an input, above) and QEMU user networking's DNS server.
install -m 0600 "$WORK/ssh_host_ed25519_key" "$root/etc/ssh/ssh_host_ed25519_key"
install -m 0644 "$WORK/ssh_host_ed25519_key.pub" "$root/etc/ssh/ssh_host_ed25519_key.pub"
echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
clamp "$root"
phase "VM layer applied"
cp -L "$root"/boot/vmlinuz-* "$WORK/vmlinuz"
cp -L "$root"/boot/initrd.img-* "$WORK/initrd.img"
touch -d "@$SOURCE_DATE_EPOCH" "$WORK/vmlinuz" "$WORK/initrd.img"
# The size from the root's content (apparent bytes), not from the host's block allocation.
size_mb=$(( $(du -sm --apparent-size "$root" | cut -f1) * 13 / 10 + 200 ))
# Deterministic ext4: mke2fs -d adds each directory's entries in sorted order (scandir), every
# timestamp it writes is E2FSPROGS_FAKE_TIME, and the UUID and directory hash seed (random by
# default) derive from the commit.
uuid=$(printf 'tablectl system %s' "$commit" | sha256sum |
    sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/')
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mkfs.ext4 -q -L system -U "$uuid" -E "hash_seed=$uuid" \
    -d "$root" "$WORK/root.img" "${size_mb}M"
# mke2fs -d (1.47.0) copies each file's atime and ctime from the host, which no build can fix
# in advance (the kernel sets ctime): set both to SOURCE_DATE_EPOCH in the image, by path.
if find "$root" -name '*"*' -print -quit | grep -q .; then
    echo "vm-build: a path in the root holds a double quote: debugfs cannot name it" >&2
    exit 1
fi
(cd "$root" && find . -mindepth 1 -printf '%P\n') |
    awk -v t="@$SOURCE_DATE_EPOCH" 'BEGIN { print "sif / atime " t; print "sif / ctime " t }
        { printf "sif \"/%s\" atime %s\nsif \"/%s\" ctime %s\n", $0, t, $0, t }' >"$WORK/times.debugfs"
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH debugfs -w -f "$WORK/times.debugfs" "$WORK/root.img" \
    >/dev/null 2>"$WORK/times.err"
if [ -s "$WORK/times.err" ] && grep -v '^debugfs [0-9.]* (' "$WORK/times.err" | grep -q .; then
    echo "vm-build: setting the image's times failed:" >&2
    head -n 5 "$WORK/times.err" >&2
    exit 1
fi
rm -f "$WORK/times.debugfs" "$WORK/times.err"
rm -rf "$root"
cp "$WORK/base/opt/tablectl/share/tablectl/manifest.json" "$WORK/base/opt/tablectl/share/tablectl/manifest.json.sig" "$WORK/"
artifacts="base.tar build.json initrd.img manifest.json manifest.json.sig packages.lock root.img vmlinuz"
$rec artifacts "$WORK" $artifacts --info "$WORK/build.json" --out "$WORK/build-record.json"
sign_record "$WORK/build-record.json"
echo "$inputs" >"$WORK/inputs.sha256"
phase "system disk root.img (${size_mb} MB), build record $WORK/build-record.json"
