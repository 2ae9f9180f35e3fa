#!/usr/bin/env bash
# Builds one prebuilt platform package, @kube-nft-proxy/linux-<arch>-gnu, into
# release/platform/linux-<arch>-gnu/: the addon compiled against N-API (so any
# Node with N-API 8 loads it), with Debian's libnftnl.so.11 and libmnl.so.0
# beside it and an $ORIGIN rpath, so the machine needs neither library. The
# libraries stay separate shared objects on purpose: Debian's libnftnl.a is not
# position-independent, and a separate .so keeps the GPL component replaceable.
#
#   scripts/build-platform-package.sh x64     native build on an amd64 host
#   scripts/build-platform-package.sh arm64   cross build: crossbuild-essential-arm64,
#                                             libnftnl-dev:arm64, libmnl-dev:arm64
#
# Needs node_modules (node-api-headers, node-addon-api) and the -dev packages of
# the target architecture; runs no install script and downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=${1:?usage: build-platform-package.sh x64|arm64}
case "$arch" in
  x64) triplet=x86_64-linux-gnu; cxx=${CXX_X64:-g++} ;;
  arm64) triplet=aarch64-linux-gnu; cxx=${CXX_ARM64:-aarch64-linux-gnu-g++} ;;
  *) echo "unknown arch $arch (x64 or arm64)" >&2; exit 2 ;;
esac
libdir=/usr/lib/$triplet
for f in "$libdir/libnftnl.so.11" "$libdir/libmnl.so.0" /usr/include/libnftnl/table.h /usr/include/libmnl/libmnl.h; do
  [ -e "$f" ] || { echo "missing $f: apt-get install libnftnl-dev:${triplet%%-*} libmnl-dev:${triplet%%-*} (see README, Installing)" >&2; exit 1; }
done
command -v "$cxx" >/dev/null || { echo "missing compiler $cxx" >&2; exit 1; }

name=linux-$arch-gnu
out=release/platform/$name
obj=release/obj/$name
rm -rf "$out" "$obj" && mkdir -p "$out" "$obj"
version=$(node -p "require('./package.json').version")
napi_inc=$(node -p "require('node-api-headers').include_dir")
addon_inc=$(node -p "require('node-addon-api').include_dir")
mapfile -t sources < <(node -p "const s=require('./native/sources.json');[...s.addon,...s.netlink,...s.glue].join('\n')")

# The same defines as binding.gyp; hidden visibility so that only N-API's
# registration symbols are exported. libstdc++ and libgcc_s stay shared: Node
# itself links them, and linking libstdc++.a in would pull in arc4random
# (glibc 2.36) and _dl_find_object (2.35) and raise the glibc minimum from
# 2.33 (test/package/glibc-versions.test.ts bounds it).
cxxflags=(-std=c++20 -O2 -fPIC -fexceptions -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter
          -DNAPI_VERSION=8 -DNODE_ADDON_API_DISABLE_DEPRECATED -DNODE_ADDON_API_CPP_EXCEPTIONS -DNDEBUG
          -I"$napi_inc" -I"$addon_inc" -Inative)
compile() { "$cxx" "${cxxflags[@]}" -c "$1" -o "$obj/$(echo "$1" | tr / _).o"; }
pids=()
for s in "${sources[@]}"; do
  compile "$s" & pids+=($!)
  # At most two compilers at once: CI machines have two cores.
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

# --disable-new-dtags: DT_RPATH (not RUNPATH) also serves libnftnl's own
# NEEDED libmnl.so.0, and LD_LIBRARY_PATH cannot swap in another copy.
"$cxx" -shared -o "$out/kube_nft_proxy.node" "$obj"/*.o \
  -L"$libdir" -l:libnftnl.so.11 -l:libmnl.so.0 \
  -Wl,--as-needed -Wl,-z,now -Wl,-O1 -s \
  -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN'
cp -L "$libdir/libnftnl.so.11" "$libdir/libmnl.so.0" "$out/"
chmod 0644 "$out"/*.so.*
[ -n "${KEEP_OBJ:-}" ] || rm -rf "$obj"

# GPL-2.0-or-later: the licence text, each library's Debian copyright file and
# where the exact sources are.
cp LICENSE "$out/LICENSE"
cp /usr/share/doc/libnftnl11/copyright "$out/COPYING.libnftnl"
cp /usr/share/doc/libmnl0/copyright "$out/COPYING.libmnl"
cp /usr/share/common-licenses/LGPL-2.1 "$out/LICENSE.LGPL-2.1"
debarch=${triplet%%-*}; [ "$debarch" = x86_64 ] && debarch=amd64; [ "$debarch" = aarch64 ] && debarch=arm64
src_of() { dpkg-query -W -f '${source:Package} ${source:Version}\n' "$1:$debarch"; }
read -r nftnl_src nftnl_ver < <(src_of libnftnl11)
read -r mnl_src mnl_ver < <(src_of libmnl0)
cat > "$out/SOURCES.md" <<EOF
# Sources of the files in this package

- \`kube_nft_proxy.node\`: the kube-nft-proxy addon, version $version, built from
  \`native/\` of the kube-nft-proxy npm package of the same version (the package
  ships those sources; \`npm run build:native\` rebuilds them).
- \`libnftnl.so.11\`: Debian's $nftnl_src $nftnl_ver ($debarch), unmodified.
  Source: \`apt-get source $nftnl_src=$nftnl_ver\`, or
  https://snapshot.debian.org/package/$nftnl_src/$nftnl_ver/ ; upstream
  https://netfilter.org/projects/libnftnl/ . Licence: GPL-2.0-or-later (COPYING.libnftnl).
- \`libmnl.so.0\`: Debian's $mnl_src $mnl_ver ($debarch), unmodified.
  Source: \`apt-get source $mnl_src=$mnl_ver\`, or
  https://snapshot.debian.org/package/$mnl_src/$mnl_ver/ ; upstream
  https://netfilter.org/projects/libmnl/ . Licence: LGPL-2.1 (COPYING.libmnl, text in LICENSE.LGPL-2.1).

The addon finds both libraries beside itself (RPATH \$ORIGIN). To use other
builds of them, replace the files: they are ordinary shared objects.
The GPL-2.0 text is in LICENSE.
EOF

cpu=$arch
cat > "$out/package.json" <<EOF
{
  "name": "@kube-nft-proxy/$name",
  "version": "$version",
  "description": "The kube-nft-proxy addon for Linux $arch (glibc), with libnftnl and libmnl beside it",
  "license": "GPL-2.0-or-later",
  "os": ["linux"],
  "cpu": ["$cpu"],
  "libc": ["glibc"],
  "files": ["kube_nft_proxy.node", "libnftnl.so.11", "libmnl.so.0", "LICENSE", "COPYING.libnftnl", "COPYING.libmnl", "LICENSE.LGPL-2.1", "SOURCES.md"],
  "preferUnplugged": true
}
EOF
echo "built $out: $(du -sh "$out" | cut -f1)"
