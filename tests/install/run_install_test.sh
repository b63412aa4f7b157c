#!/usr/bin/env bash
# Installs strata into a temporary prefix, runs every installed program from
# there without LD_LIBRARY_PATH (their RPATH is relative to the binary), and
# builds a user program against the prefix twice: with CMake's
# find_package(strata) and with pkg-config.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libstrata.so' | head -1)")
test -f "$tmp/prefix/include/strata/strata.h"
# The installed programs, moved with their prefix, as users run them.
mv "$tmp/prefix" "$tmp/moved"
bin="$tmp/moved/bin"
test -x "$bin/strata-perf"
out=$(env -u LD_LIBRARY_PATH "$bin/strata-perf" all_reduce -np 2 -b 1K -e 1K -n 2 -w 1 -c 1)
grep -q "Out of bounds values : 0 OK" <<<"$out" || { echo "$out"; echo "installed strata-perf failed"; exit 1; }
if env -u LD_LIBRARY_PATH ldd "$bin/strata-perf" | grep -q "libstrata.*not found"; then
  echo "installed strata-perf does not find libstrata"; exit 1
fi
for prog in "$bin"/*; do  # every installed program starts (its usage or a table)
  env -u LD_LIBRARY_PATH "$prog" --help >/dev/null 2>&1 || [ $? -le 2 ] || { echo "$prog does not start"; exit 1; }
done
mv "$tmp/moved" "$tmp/prefix"
cmake -S "$here/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$here/consumer/main.c" $(pkg-config --cflags --libs strata) -o "$tmp/pc-consumer"
LD_LIBRARY_PATH="$libdir" "$tmp/pc-consumer"
echo "install test passed"
