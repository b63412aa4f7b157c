#!/usr/bin/env bash
# ctest in BUILD_DIR (output on failure, 900 s a test) with ARGS (a filter
# that selects no test, or that CMake cannot compile, is an error); when it
# fails, repeats at the very end what each failing test said about its
# failure: CI shows only the head and tail of a long log, and a failing
# test's own lines sit in the middle of it. Exits with ctest's status.
# Usage: scripts/run_ctest.sh BUILD_DIR [CTEST ARGS...]
build=$1
shift
ctest --test-dir "$build" --output-on-failure --no-tests=error --timeout 900 "$@" && exit 0
rc=$?
dir=$build/Testing/Temporary
[ -f "$dir/LastTestsFailed.log" ] || exit $rc
echo "==== what the failing tests said (from $dir/LastTest.log) ===="
while IFS=: read -r _ name; do
  [ -n "$name" ] || continue
  echo "---- $name"
  # The test's block runs from "N/M Testing: NAME" to its "Test Failed" line.
  awk -v name="$name" '
    $0 ~ "^[0-9]+/[0-9]+ Testing: " && substr($0, index($0, ": ") + 2) == name { on = 1; n = 0; next }
    on && /^Test (Passed|Failed)/ { on = 0 }
    on { line[n++] = $0 }
    END {
      for (i = 0; i < n; i++)
        # gtest and sanitizer failures, the verdicts of the shell tests, and a survivor
        # of tests/netns that got anything but "remote error" after the kill.
        if (line[i] ~ /FAILED|Failure|exited [0-9]|after the kill: [^r]|never died|Assertion|Sanitizer|Segmentation|Which is/)
          print "  " line[i]
      print "  (its last lines:)"
      for (i = (n > 15 ? n - 15 : 0); i < n; i++) print "  " line[i]
    }' "$dir/LastTest.log" | cut -c1-400 | head -n 80
done < "$dir/LastTestsFailed.log"
exit $rc
