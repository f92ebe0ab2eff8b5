#!/bin/bash
# `./dev image-repro [--parallel] [OUT]` (root): build the table image twice from clean, from
# this commit, into OUT/a and OUT/b (default image/vm/repro, git-ignored), and compare every
# artifact (image/repro.py): exit 0 when all are byte-identical; on a difference, name what
# differs and run diffoscope (if installed) on the first artifact that differs, exit 1; a build
# that fails: exit 2.
# --parallel: the two builds at once (less wall time, each slower; a harder test of timing).
#
# The two builds get the same inputs a lab would be given: the signing key
# (TABLECTL_SIGNING_KEY, else one throwaway key for both), the VM layer's ssh keys, the mirror
# (TABLECTL_MIRROR) and, if set, the package lock (TABLECTL_PACKAGES_LOCK).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${TABLECTL_PYTHON:-$REPO/.venv/bin/python}
parallel=0
if [ "${1:-}" = --parallel ]; then parallel=1; shift; fi
OUT=$(mkdir -p "${1:-$REPO/image/vm/repro}" && cd "${1:-$REPO/image/vm/repro}" && pwd)
ARTIFACTS="base.tar build.json packages.lock manifest.json manifest.json.sig initrd.img vmlinuz root.img build-record.json build-record.json.sig"

rm -rf "$OUT/a" "$OUT/b" "$OUT/inputs"
mkdir -p "$OUT/inputs"
if [ -z "${TABLECTL_SIGNING_KEY:-}" ]; then
    PYTHONPATH="$REPO" "$PY" -m controller.verify keygen --private "$OUT/inputs/signing.pem" \
        --public "$OUT/inputs/signing.pub" >/dev/null
    export TABLECTL_SIGNING_KEY=$OUT/inputs/signing.pem
fi
ssh-keygen -q -t ed25519 -N '' -C tablectl-vm-test -f "$OUT/inputs/id_ed25519"
ssh-keygen -q -t ed25519 -N '' -C tablectl-vm-host -f "$OUT/inputs/ssh_host_ed25519_key"
for b in a b; do
    mkdir -p "$OUT/$b"
    cp -a "$OUT/inputs/." "$OUT/$b/"
    rm -f "$OUT/$b/signing.pem" "$OUT/$b/signing.pub"
done
# binfmt_misc once, before two builds could race to register it.
if [ "$(uname -m)" != aarch64 ]; then
    [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
        grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi

build() {
    local t=$SECONDS rc=0
    "$REPO/image/vm/build.sh" "$OUT/$1" >"$OUT/$1.log" 2>&1 || rc=$?
    echo $((SECONDS - t)) >"$OUT/$1.seconds"
    [ "$rc" -eq 0 ] || { echo "image-repro: build $1 failed (exit $rc), last lines of $OUT/$1.log:" >&2
        tail -n 20 "$OUT/$1.log" >&2; return "$rc"; }
}
echo "image-repro: building twice from $(git -C "$REPO" rev-parse --short HEAD) into $OUT/a and $OUT/b" >&2
if [ "$parallel" = 1 ]; then
    build a & pa=$!
    build b & pb=$!
    failed=0
    wait "$pa" || failed=1
    wait "$pb" || failed=1
    [ "$failed" = 0 ] || exit 2
else
    build a || exit 2
    build b || exit 2
fi

rc=0
"$PY" "$REPO/image/repro.py" compare "$OUT/a" "$OUT/b" $ARTIFACTS \
    --time-a "$(cat "$OUT/a.seconds")" --time-b "$(cat "$OUT/b.seconds")" || rc=$?
if [ "$rc" -eq 1 ] && command -v diffoscope >/dev/null; then
    for f in $ARTIFACTS; do
        cmp -s "$OUT/a/$f" "$OUT/b/$f" && continue
        echo "image-repro: diffoscope on $f (full report $OUT/diffoscope.txt), first differences:"
        timeout 900 diffoscope --max-report-size 2000000 --text "$OUT/diffoscope.txt" \
            "$OUT/a/$f" "$OUT/b/$f" >/dev/null 2>&1 || true
        head -n 80 "$OUT/diffoscope.txt" 2>/dev/null || true
        break
    done
fi
exit "$rc"
