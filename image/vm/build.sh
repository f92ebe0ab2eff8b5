#!/bin/bash
# Build the table's arm64 root for the VM (image/vm/README.md): the product part with the
# image's own recipe (image/customize.sh, unchanged) in mmdebstrap, the VM layer (layer.sh) on
# a copy of it, then the system disk (ext4) and the kernel and initramfs to boot it with.
#
#   image/vm/build.sh [WORK]    (default image/vm/work; root; the Debian and PyPI registries)
#
# Out: WORK/root.img, WORK/vmlinuz, WORK/initrd.img, WORK/id_ed25519 (the test's ssh key).
# Cache: WORK/base (the product root) is rebuilt only when the product's inputs change
# (WORK/base.sha256), root.img only when those or the VM layer's change (WORK/inputs.sha256).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=$(mkdir -p "${1:-$HERE/work}" && cd "${1:-$HERE/work}" && pwd)
PY=${TABLECTL_PYTHON:-$REPO/.venv/bin/python}
MIRROR=${TABLECTL_MIRROR:-http://deb.debian.org/debian}
t0=$SECONDS
phase() { echo "vm-build: $1 ($((SECONDS - t0)) s)" >&2; }
# The hash of files' paths and contents, from the current directory or the repository.
digest() { find "$@" \( -type f -o -type l \) ! -name '*.pyc' -print0 | sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-64; }
digest_repo() { (cd "$REPO" && digest "$@"); }

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

# The recipe as the table image gets it, except one file: the VM's three USB serial adapters are
# all FT232s (QEMU's usb-serial, 0403:6001), so the udev rules are the ones `tablectl devices
# udev` makes from the VM's configs (told apart by USB serial string), as
# systemd/99-tablectl-serial.rules says a table with other adapters does. customize.sh installs
# them and signs them into the manifest like the shipped file.
recipe=$WORK/recipe
rm -rf "$recipe"
mkdir -p "$recipe"
(cd "$REPO" && cp -a --parents image/customize.sh image/packages.txt image/overlay \
    $(ls image/*.lock image/lock.sh 2>/dev/null) systemd controller devices headoffice shared \
    pyproject.toml docs/operations.md docs/verification.md examples "$recipe/")
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
    echo "$mmdebstrap_cmd"; } | sha256sum | cut -c1-64)
inputs="$base_inputs $(digest_repo image/vm/layer.sh image/vm/overlay) $(sha256sum <"$WORK/id_ed25519.pub" | cut -c1-64)"
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
    (cd "$REPO" && cp -a pyproject.toml README.md controller devices headoffice shared "$WORK/src/")
    find "$WORK/src" -name __pycache__ -prune -exec rm -rf {} +
    "$PY" -m pip wheel -q --no-deps -w "$wheels" "$WORK/src"
    rm -rf "$WORK/src"
    wheel=$(ls "$wheels"/tablectl-*.whl)
    phase "recipe staged, wheel $(basename "$wheel")"
    pkgs=$(cat "$REPO/image/packages.txt" "$HERE/packages.txt" | grep -v '^\s*#' |
        grep -v '^\s*$' | paste -sd,)
    # The VM's initramfs settings go in before the kernel (its postinst builds the initramfs).
    $mmdebstrap_cmd --include="$pkgs" \
        --essential-hook="mkdir -p \"\$1/etc/initramfs-tools\" && cp -a $HERE/initramfs/. \"\$1/etc/initramfs-tools/\"" \
        --customize-hook="TABLECTL_WHEEL=$wheel TABLECTL_PYTHON=$PY $recipe/image/customize.sh \"\$1\"" \
        bookworm "$WORK/base" "$MIRROR"
    echo "$base_inputs" >"$WORK/base.sha256"
    phase "product root built (mmdebstrap + image/customize.sh)"
fi

root=$WORK/root
rm -rf "$root"
cp -a "$WORK/base" "$root"
VM_AUTHORIZED_KEY=$(cat "$WORK/id_ed25519.pub") "$HERE/layer.sh" "$root"
phase "VM layer applied"
cp -L "$root"/boot/vmlinuz-* "$WORK/vmlinuz"
cp -L "$root"/boot/initrd.img-* "$WORK/initrd.img"
size_mb=$(( $(du -sm "$root" | cut -f1) * 13 / 10 + 200 ))
mkfs.ext4 -q -L system -d "$root" "$WORK/root.img" "${size_mb}M"
rm -rf "$root"
echo "$inputs" >"$WORK/inputs.sha256"
phase "system disk root.img (${size_mb} MB)"
