#!/bin/sh
# The VM layer (VM only, never in the table image): what stands in for the Pi's firmware side
# and lets the test in. build.sh runs it on a copy of the root that mmdebstrap and
# image/customize.sh made, exactly as for the Pi.
#
#   image/vm/layer.sh ROOT          (env VM_AUTHORIZED_KEY: the test's ssh public key)
set -eu
ROOT=$(realpath "${1:?usage: layer.sh ROOT}")
HERE=$(cd "$(dirname "$0")" && pwd)
key=${VM_AUTHORIZED_KEY:?VM_AUTHORIZED_KEY: the ssh public key of the test}

cp -a "$HERE/overlay/." "$ROOT/"
echo tablectl-vm >"$ROOT/etc/hostname"

# The read-only root layout of the image (image/README.md): root ro, the data partition at
# /persistent; /var is volatile (tmpfs) except the system log, kept on the data partition as
# the image's journald drop-in and tmpfiles expect (/persistent/log/journal).
cat >"$ROOT/etc/fstab" <<'FSTAB'
# VM only (image/vm/layer.sh): vda = the system slot (read-only), vdb = the data partition.
/dev/vda            /           ext4   ro,noatime                          0 1
# 300 s: on a loaded 2-core host TCG took longer than systemd's default 90 s to show the disk
# (one run went to emergency mode); a Pi's fstab keeps the default. lazytime,commit=60 as the
# Pi's persistent.mount has them (rpi-image-gen's image-rota slot-perst-generator): commit=60
# is most of what keeps a table's writes to the card down (docs/daemon.md, "What reaches the card").
LABEL=persistent    /persistent ext4   rw,noatime,lazytime,commit=60,nodev,nosuid,x-systemd.device-timeout=300s 0 2
tmpfs               /var        tmpfs  mode=0755,nosuid,nodev              0 0
tmpfs               /tmp        tmpfs  mode=1777,nosuid,nodev              0 0
/persistent/log     /var/log    none   bind,x-systemd.requires-mounts-for=/persistent 0 0
# The Pi firmware's boot partition (autoboot.txt for tryboot A/B) when the test attaches one:
# FAT, as the Pi's (the kernel's vfat module; tablectl-slot's write-sync-rename runs on it).
# nofail: absent on the other boots. Under TCG udev names the disk late: 5 s was too short.
LABEL=bootfs        /bootfs     vfat   rw,noatime,nofail,x-systemd.device-timeout=90s 0 2
FSTAB
mkdir -p "$ROOT/persistent" "$ROOT/bootfs"
# systemd makes a transient machine id on a read-only root when the file is empty.
: >"$ROOT/etc/machine-id"

# Network (QEMU user networking) and ssh for the test; a technician account as
# docs/operations.md makes one: groups tablectl and tablectl-tech (read-only commands).
systemctl --root="$ROOT" enable systemd-networkd.service ssh.service
chroot "$ROOT" useradd --create-home --groups tablectl,tablectl-tech --shell /bin/bash tech
for home in /root /home/tech; do
    mkdir -p "$ROOT$home/.ssh"
    printf '%s\n' "$key" >"$ROOT$home/.ssh/authorized_keys"
    chmod 0700 "$ROOT$home/.ssh"
    chmod 0600 "$ROOT$home/.ssh/authorized_keys"
done
chroot "$ROOT" chown -R tech:tech /home/tech/.ssh
# sshd keeps nothing under /var; DNS lookups of the client would only slow a login down.
printf 'UseDNS no\n' >"$ROOT/etc/ssh/sshd_config.d/vm.conf"

# The head office unit reads /etc/tablectl/headoffice.toml: on the VM it is on the data
# partition, written by the test (the table image does not run head office).
ln -sfn /persistent/etc/tablectl/headoffice.toml "$ROOT/etc/tablectl/headoffice.toml"

rm -rf "$ROOT/var/lib/apt/lists/"* "$ROOT/var/cache/apt/"*.bin
