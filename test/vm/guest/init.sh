#!/bin/busybox sh
# Stage 1, PID 1 of the initramfs: mount the host's / (read-only, virtio-9p)
# under a tmpfs overlay, mount the shared result folder, and hand over to
# stage 2 inside that root. Any failure powers off at once with a line the
# host's runner finds in the console log, so a broken VM never hangs a test.
/bin/busybox mkdir -p /bin /proc /sys /dev /lower /rw /newroot
/bin/busybox --install -s /bin
export PATH=/bin

fail() {
  echo "knp-init: FAILED: $*"
  echo o > /proc/sysrq-trigger
  sleep 5
  reboot -f
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"

echo "knp-init: started at uptime $(cut -d" " -f1 /proc/uptime)s"
for m in $(cat /modules.list); do
  insmod "/modules/$m" || fail "insmod $m"
done

# The lower layer never changes while the VM runs, so cache it hard.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /lower \
  || fail "mount the host root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 tmpfs /rw || fail "mount the overlay's tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot \
  || fail "mount the overlay root"
mkdir -p /newroot/knp-share
mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288 knpshare /newroot/knp-share \
  || fail "mount the shared folder (9p tag knpshare)"
cp /stage2.sh /newroot/knp-stage2.sh || fail "copy stage 2"

echo "knp-init: root ready at uptime $(cut -d" " -f1 /proc/uptime)s"
umount /proc /sys /dev
exec switch_root /newroot /bin/sh /knp-stage2.sh
