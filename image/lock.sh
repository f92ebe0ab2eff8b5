#!/bin/sh
# Refresh the image's pinned, hashed Python requirements (image/README.md, "Pinned wheels"):
#
#   image/lock.sh          rewrite image/requirements-aarch64.lock and -x86_64.lock
#
# One lock per architecture, resolved for the image's interpreter (CPython 3.11, glibc 2.36,
# Debian bookworm) with binary wheels only, from pyproject.toml's dependencies (no extras:
# numpy is the `math` extra, systemd-python comes from Debian). Per architecture, not one
# universal file: pip evaluates markers on the build host, so an x86-64 host would drop
# aarch64-only lgpio from a universal lock. Needs uv (UV=/path/to/uv, default `uv`:
# python3 -m pip install uv). Review the diff before committing it.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
UV=${UV:-uv}
cd "$(dirname "$HERE")"
for arch in aarch64 x86_64; do
    "$UV" pip compile pyproject.toml --quiet --python-version 3.11 \
        --python-platform "${arch}-manylinux_2_36" --only-binary :all: --generate-hashes \
        --custom-compile-command "image/lock.sh" -o "image/requirements-$arch.lock"
done
