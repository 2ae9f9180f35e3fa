#!/bin/sh
# Stage 2, PID 1 in the host's root (overlay): the usual mounts, the guest
# kernel's modules where modprobe looks for them, the modules the tests rely
# on, then the one command. Its output and exit code go to /knp-share; the VM
# then powers off (PID 1 must never return: that would be a kernel panic).
export PATH=/opt/node24/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
say() { echo "knp-stage2: $*" > /dev/console; }
off() {
  sync
  echo o > /proc/sysrq-trigger
  sleep 5
  echo b > /proc/sysrq-trigger
}
fail() { say "FAILED: $*"; off; }

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run || fail "mount /run"
# /tmp stays the overlay's (the host's, made writable): a clone of the repo
# under /tmp must stay visible.
[ -e /dev/console ] && exec < /dev/null

# knp.modules=<dir> on the kernel command line: the unpacked package's
# lib/modules/<version>, on the host's disk and so visible through 9p.
mods=
for arg in $(cat /proc/cmdline); do
  case "$arg" in knp.modules=*) mods=${arg#knp.modules=} ;; esac
done
ver=$(uname -r)
[ -n "$mods" ] && [ -d "$mods" ] || fail "no knp.modules= directory on the kernel command line ($mods)"
mkdir -p "/lib/modules/$ver" && mount --bind "$mods" "/lib/modules/$ver" || fail "bind $mods"

say "mounts done at uptime $(cut -d" " -f1 /proc/uptime)s"
hostname knp-vm
ip link set lo up
# Loaded up front so a missing module fails here, by name, not as an odd
# ENOENT from the first nft command; the rest autoload through modprobe.
modprobe -a nf_tables nf_conntrack nf_conntrack_netlink nf_flow_table nf_flow_table_inet \
  nft_flow_offload nft_ct nft_nat nft_chain_nat veth 2>/dev/console || fail "modprobe"

start=$(cut -d' ' -f1 /proc/uptime)
: > /knp-share/started
say "running the command at uptime ${start}s"
# Every node in the guest runs with --no-wasm-dynamic-tiering --no-wasm-tier-up
# (a wrapper first on PATH, made once /run is mounted; agent-child.ts hands the
# scenario's flags on to the agents). Under TCG, V8 now and then died while
# tiering up undici's WebAssembly HTTP parser: its stack walk in
# Runtime_WasmTriggerTierUp found no JIT allocation for a pc ("Check failed:
# it->second.Size() > offset", or SIGSEGV), about one agent-offload run in
# three. Liftoff code parses HTTP just as correctly. (The agent now loads
# undici only to go through a proxy, which no scenario here does.)
mkdir -p /run/knp-bin
printf '#!/bin/sh\nexec /opt/node24/bin/node --no-wasm-dynamic-tiering --no-wasm-tier-up "$@"\n' > /run/knp-bin/node
chmod 0755 /run/knp-bin/node
export PATH=/run/knp-bin:$PATH
/bin/sh /knp-share/run.sh > /knp-share/stdout 2> /knp-share/stderr
code=$?
end=$(cut -d' ' -f1 /proc/uptime)
echo "$start $end" > /knp-share/uptime
echo "$code" > /knp-share/exit-code
say "command exited with $code at uptime ${end}s"
off
