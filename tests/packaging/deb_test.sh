#!/usr/bin/env bash
# packaging.deb_installs: the .deb as a user gets it. cpack makes it from the build folder into a
# temp folder, dpkg-deb unpacks it into a temp root, and the demo's first steps run from there
# (the daemon started, asked, listed, stopped) in their own HOME, XDG folders and socket.
#   usage: tests/packaging/deb_test.sh BUILD_DIR [CPACK]      exit 77 (skipped) without dpkg-deb
set -euo pipefail

build=$1
cpack=${2:-cpack}
fail() {
  printf 'deb_test: %s\n' "$*" >&2
  exit 1
}
command -v dpkg-deb >/dev/null 2>&1 || {
  echo "deb_test: dpkg-deb is not installed: skipped"
  exit 77
}

tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
  # A daemon left by a failed step is stopped before its folders go.
  if [ -x "$root/usr/bin/oppx" ] && [ -n "${OPPX_SOCKET:-}" ]; then "$root/usr/bin/oppx" daemon stop >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
  fail "cpack failed: $(cat "$tmp/cpack.log")"
debs=("$tmp"/out/*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "cpack made no single .deb: $(ls "$tmp/out")"
deb=${debs[0]}
dpkg-deb -x "$deb" "$root"

# The files a user expects, where Debian's tools look for them.
for f in usr/bin/oppx usr/bin/oppxd usr/share/man/man1/oppx.1 usr/share/man/man1/oppxd.1 \
  usr/share/bash-completion/completions/oppx usr/share/zsh/vendor-completions/_oppx \
  usr/lib/systemd/user/oppxd.service; do
  [ -f "$root/$f" ] || fail "the .deb has no $f; it holds: $(cd "$root" && find . -type f | sort | tr '\n' ' ')"
done
for f in usr/bin/oppx usr/bin/oppxd; do [ -x "$root/$f" ] || fail "$f is not executable"; done
grep -q '^ExecStart=/usr/bin/oppxd' "$root/usr/lib/systemd/user/oppxd.service" ||
  fail "oppxd.service does not start /usr/bin/oppxd: $(grep ExecStart "$root/usr/lib/systemd/user/oppxd.service")"
if [ -f "$(dirname "$0")/../../packaging/systemd/oppxd.socket" ]; then
  [ -f "$root/usr/lib/systemd/user/oppxd.socket" ] || fail "the .deb has no usr/lib/systemd/user/oppxd.socket"
fi
grep -q '^\.SH COMMANDS' "$root/usr/share/man/man1/oppx.1" || fail "oppx.1 has no COMMANDS section"
grep -q 'complete -F _oppx oppx' "$root/usr/share/bash-completion/completions/oppx" || fail "the bash completion is not oppx's"

# `cmake --install --prefix ~/.local` (README): the units where the systemd user manager looks
# for them under a home prefix ($XDG_DATA_HOME/systemd/user), started from that prefix's oppxd.
local=$tmp/local
cmake --install "$build" --prefix "$local" >"$tmp/install.log" 2>&1 || fail "cmake --install failed: $(cat "$tmp/install.log")"
[ -f "$local/share/systemd/user/oppxd.service" ] ||
  fail "cmake --install --prefix put no share/systemd/user/oppxd.service: $(cd "$local" && find . -path '*systemd*')"
grep -q "^ExecStart=$local/bin/oppxd" "$local/share/systemd/user/oppxd.service" ||
  fail "the installed oppxd.service does not start $local/bin/oppxd"
[ ! -e "$local/lib/systemd" ] || fail "cmake --install --prefix still wrote lib/systemd, which systemd does not search"

# The control file: the package's name, its dependencies and what it recommends.
info=$(dpkg-deb -I "$deb")
grep -q '^ *Package: oppx$' <<<"$info" || fail "no 'Package: oppx' in: $info"
grep -q '^ *Depends: .*libc6' <<<"$info" || fail "no libc6 in Depends: $info"
grep -q '^ *Recommends: .*nodejs' <<<"$info" || fail "no nodejs in Recommends: $info"

# The programs from the unpacked root: oppx starts the oppxd beside it.
version=$("$root/usr/bin/oppx" --version) || fail "oppx --version failed"
[[ $version == oppx\ * ]] || fail "oppx --version printed: $version"
export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/config XDG_STATE_HOME=$tmp/home/state \
  XDG_CACHE_HOME=$tmp/home/cache XDG_DATA_HOME=$tmp/home/data XDG_RUNTIME_DIR=$tmp/home/run
mkdir -p "$XDG_CONFIG_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME" "$XDG_DATA_HOME"
mkdir -m 0700 -p "$XDG_RUNTIME_DIR"
export OPPX_SOCKET=$XDG_RUNTIME_DIR/oppx/oppxd.sock
oppx=$root/usr/bin/oppx
cd "$tmp"  # outside any repository, so that no .mcp.json but the test's applies
"$oppx" daemon start || fail "oppx daemon start failed"
status=$("$oppx" daemon status) || fail "oppx daemon status failed"
grep -q "$root/usr/bin/oppxd\|pid" <<<"$status" || fail "oppx daemon status printed: $status"
"$oppx" mcp list || fail "oppx mcp list failed"
pid=$(cat "$OPPX_SOCKET.lock" 2>/dev/null || true)
"$oppx" daemon stop || fail "oppx daemon stop failed"
# Gone, or a zombie that this container's init has not reaped yet.
if [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat")" != Z ]; then
  fail "oppxd (pid $pid) still runs after oppx daemon stop"
fi
echo "deb_test: $(basename "$deb") installs and runs"
