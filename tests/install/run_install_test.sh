#!/usr/bin/env bash
# Installs strata into a temporary prefix and builds a user program against it
# twice: with CMake's find_package(strata) and with pkg-config.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libstrata.so' | head -1)")
test -f "$tmp/prefix/include/strata/strata.h"
cmake -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$here/consumer/main.c" $(pkg-config --cflags --libs strata) -o "$tmp/pc-consumer"
LD_LIBRARY_PATH="$libdir" "$tmp/pc-consumer"
echo "install test passed"
