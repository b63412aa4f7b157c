#!/usr/bin/env bash
# Packages the GPU machine lacks for building strata's tests (it has nvcc,
# CMake and ninja but no hwloc, nlohmann-json or GoogleTest, and no network):
# downloads this machine's Debian packages and unpacks them into .gpu-deps/root,
# which the device tool carries (`carry: [".gpu-deps"]`) and scripts/gpu-check.sh
# uses (.gpu-deps/fallback: libudev, for a machine without one). Idempotent; a
# second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(libhwloc-dev libhwloc15 nlohmann-json3-dev libgtest-dev libgmock-dev googletest)
root=.gpu-deps/root
if [ -f "$root/.complete" ]; then
  echo "gpu-deps: $root is ready"
  exit 0
fi
rm -rf .gpu-deps
mkdir -p .gpu-deps/debs "$root"
(cd .gpu-deps/debs && apt-get download "${packages[@]}" 2>/dev/null)
for deb in .gpu-deps/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
# libhwloc's one other library, used there only when the machine has none of its own.
(cd .gpu-deps/debs && apt-get download libudev1 2>/dev/null && dpkg-deb -x libudev1_*.deb udev)
mkdir -p .gpu-deps/fallback
cp -a .gpu-deps/debs/udev/usr/lib/x86_64-linux-gnu/libudev.so.1* .gpu-deps/fallback/
rm -rf .gpu-deps/debs "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/src"
touch "$root/.complete"
echo "gpu-deps: unpacked ${packages[*]} into $root ($(du -sh "$root" | cut -f1))"
