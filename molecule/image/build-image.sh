#!/usr/bin/env bash
# Builds the Debian 12 base image every molecule scenario boots: a debootstrap rootfs with
# systemd as PID 1, python3 for Ansible, sudo, apt sources incl. contrib/non-free/non-free-firmware.
# Usage: build-image.sh TAG   (called by scripts/molecule.sh only when TAG is missing)
# No registry is reachable, so nothing is pulled: the rootfs comes from the Debian mirror.
set -euo pipefail
tag=$1
here=$(cd "$(dirname "$0")" && pwd)
mirror=${SUPERPOD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${SUPERPOD_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
work=$(mktemp -d /var/tmp/superpod-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

packages=$(grep -v '^#' "$here/packages.txt" | xargs | tr ' ' ',')
debootstrap --variant=minbase --include="$packages" \
  --components=main,contrib,non-free,non-free-firmware bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -n 40 "$work/debootstrap.log"; exit 1; }

# apt: every scenario needs the same sources (non-free carries the NVIDIA driver packages).
cat >"$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main contrib non-free non-free-firmware
deb $mirror bookworm-updates main contrib non-free non-free-firmware
deb $security_mirror bookworm-security main contrib non-free non-free-firmware
SRC
cp "$here/apt.conf" "$root/etc/apt/apt.conf.d/90superpod-molecule"
cp "$here/dpkg-nodoc.cfg" "$root/etc/dpkg/dpkg.cfg.d/90superpod-nodoc"
cp "$here/dpkg-unsafe-io.cfg" "$root/etc/dpkg/dpkg.cfg.d/90superpod-unsafe-io"

# systemd in a container: nothing that needs real hardware or a console.
for unit in getty@tty1.service console-getty.service serial-getty@ttyS0.service \
  systemd-remount-fs.service sys-kernel-config.mount sys-kernel-debug.mount \
  sys-kernel-tracing.mount systemd-firstboot.service apt-daily.timer apt-daily-upgrade.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# Bootloader fixture: a real node's /etc/default/grub, and a grub-mkconfig stand-in (see its header).
install -m 0644 "$here/grub-default" "$root/etc/default/grub"
install -d "$root/etc/default/grub.d"
install -m 0755 "$here/molecule-update-grub" "$root/usr/local/sbin/molecule-update-grub"
echo "superpod-molecule" >"$root/etc/hostname"
: >"$root/etc/machine-id"
chroot "$root" apt-get update -qq
chroot "$root" apt-get clean
rm -rf "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*

tar -C "$root" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'CMD ["/sbin/init"]' \
  --message "superpod molecule base image" - "$tag" >/dev/null
