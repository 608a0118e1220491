#!/usr/bin/env bash
# Runs a command with the sanitizer reports of it and of every process it starts (the daemon the
# CLI starts too) written to files in a folder of its own, and fails when one holds a report: for
# the CTest entries that are not GoogleTest (bench.*, conformance.*), whose daemons' stderr nobody
# reads. In a build without sanitizers nothing writes there and the command's status is kept.
#   usage: sanitizer_wrap.sh COMMAND [ARGS...]
set -uo pipefail
dir=$(mktemp -d "${TMPDIR:-/tmp}/oppx-sanitizer-XXXXXX") || exit 1
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
  # What the caller set stays, except a log_path of its own.
  kept=$(printf '%s' "${!v:-}" | tr ':' '\n' | grep -v '^log_path=' | grep -v '^$' | paste -sd: -)
  export "$v=${kept:+$kept:}log_path=$dir/report"
done
"$@"
status=$?
if grep -q -E 'ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ThreadSanitizer' "$dir"/report* 2>/dev/null; then
  printf 'sanitizer reports from the processes of %s:\n' "$1" >&2
  cat "$dir"/report* >&2
  status=1
fi
rm -rf "$dir"
exit "$status"
