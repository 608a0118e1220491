#!/usr/bin/env bash
# Runs each libFuzzer target of fuzz/ for SECONDS (default 20), one after the other, each from its
# seed corpus (fuzz/corpus/<target>/, never written to) plus what earlier runs found
# (build-fuzz/corpus/<target>/). Builds the `fuzz` preset first (packaging/bootstrap.sh --preset fuzz
# installs clang-14 and libFuzzer). A crash, a leak or a broken property stops the run: the input is
# saved under build-fuzz/artifacts/<target>/ and the line that replays it is printed.
#   usage: fuzz/run.sh [SECONDS] [TARGET...]      (targets: see fuzz/CMakeLists.txt)
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

seconds=${1:-20}
[ $# -gt 0 ] && shift
case "$seconds" in
  '' | *[!0-9]*)
    printf 'fuzz: SECONDS must be a whole number, not "%s"\nusage: fuzz/run.sh [SECONDS] [TARGET...]\n' "$seconds" >&2
    exit 2
    ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  read -r -a targets <<<"$(sed -n 's/^set(OPPX_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/CMakeLists.txt)"
fi

# The files a target writes (the consent store's, with their fsyncs) go to memory when it can.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi

[ -f build-fuzz/CMakeCache.txt ] || cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

printf '%-16s %8s %10s %8s %8s\n' target seconds execs/s corpus cov
for t in "${targets[@]}"; do
  bin=build-fuzz/fuzz_$t
  [ -x "$bin" ] || {
    printf 'fuzz: no target %s (%s is missing)\n' "$t" "$bin" >&2
    exit 2
  }
  work=build-fuzz/corpus/$t
  artifacts=build-fuzz/artifacts/$t
  mkdir -p "$work" "$artifacts"
  out=build-fuzz/fuzz-$t.log
  # -timeout: one input taking this long is a hang; -rss_limit_mb: memory must stay bounded.
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "fuzz/corpus/$t" >"$out" 2>&1; then
    tail -n 60 "$out" >&2
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$out" | tail -n 1)
    printf 'fuzz: %s failed; replay: %s %s   (log: %s)\n' "$t" "$bin" "${input:-<input>}" "$out" >&2
    exit 1
  fi
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$out" | tail -n 1)
  execs=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  corpus=$(find "$work" "fuzz/corpus/$t" -type f | wc -l)
  printf '%-16s %8s %10s %8s %8s\n' "$t" "$seconds" "${execs:-?}" "$corpus" "${cov:-?}"
done
