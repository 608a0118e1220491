#!/usr/bin/env bash
# Sets a Debian 12 machine up to build and test oppx, then builds it. Idempotent: a second run
# installs nothing, configures nothing and only lets Ninja check that the build is up to date.
#   usage: packaging/bootstrap.sh [--preset NAME] [--quick]   (default preset: default, into
#          build/; the others: asan, tsan, fuzz, into build-NAME/; --quick: only oppx and oppxd and
#          the npm packages the demo starts, into build/; a later run without it builds the rest)
# Run as root when Debian packages are missing. The npm packages go into build/npm, build/node22
# and build/conformance, never globally.
set -euo pipefail

say() { printf 'bootstrap: %s\n' "$*"; }
warn() { printf 'bootstrap: warning: %s\n' "$*" >&2; }
die() {
  printf 'bootstrap: error: %s\n' "$*" >&2
  exit 1
}

preset=default
quick=""
while [ $# -gt 0 ]; do
  case "$1" in
    --preset)
      [ $# -ge 2 ] || die "--preset needs a name (see CMakePresets.json)"
      preset=$2
      shift 2
      ;;
    --preset=*)
      preset=${1#--preset=}
      shift
      ;;
    --quick)
      quick=1
      shift
      ;;
    -h | --help)
      sed -n '2,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    *)
      printf 'bootstrap: unknown argument %s\nusage: packaging/bootstrap.sh [--preset NAME] [--quick]\n' "$1" >&2
      exit 2
      ;;
  esac
done

root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$root"

# The preset's binary folder (as in CMakePresets.json), checked before anything is installed.
case "$preset" in
  default) bin=$root/build ;;
  asan) bin=$root/build-asan ;;
  tsan) bin=$root/build-tsan ;;
  fuzz) bin=$root/build-fuzz ;;
  *) die "no preset named \"$preset\"; the presets are default, asan, tsan and fuzz (CMakePresets.json)" ;;
esac
if [ -n "$quick" ] && [ "$preset" != default ]; then
  die "--quick builds the default preset only (oppx and oppxd into build/); drop --preset $preset or --quick"
fi

# 1. Debian packages: ask dpkg first, so that nothing calls apt when all are there.
apt_packages=(g++ cmake ninja-build pkg-config libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libfmt-dev libssl-dev libgtest-dev util-linux procps ca-certificates openssl tmux chromium
  bubblewrap python3)  # bubblewrap: the sandbox of the agent's commands (chat/sandbox.cpp); python3: the
                       # example client of docs/examples/, which the tests run
apt_packages+=(neovim) # the Neovim plugin's test (editors/nvim, ctest nvim.plugin) runs it headless
# The zsh completion's test types Tab in zsh; the quick start builds no tests and skips it.
[ -n "$quick" ] || apt_packages+=(zsh)
# The fuzz targets (fuzz/) need clang and its libFuzzer; only that preset pays for them.
if [ "$preset" = fuzz ]; then
  apt_packages+=(clang-14 libfuzzer-14-dev)
fi
missing=()
for p in "${apt_packages[@]}"; do
  if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  say "Debian packages present"
else
  [ "$(id -u)" -eq 0 ] || die "run as root to install the missing packages: ${missing[*]}"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

rel=${bin#"$root"/}

# 2. Node.js (not from Debian) and the pinned MCP servers the tests and the demo start.
if command -v node >/dev/null 2>&1; then
  node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$node_major" -lt 18 ]; then
    warn "node $(node --version) is too old: the connector tests of later issues need Node 18+"
  fi
else
  warn "node not found: the connector tests of later issues need Node 18+; carrying on without it"
fi
# Installs packaging/SRC/package.json into build/SRC (never globally) unless the install there is
# newer than the file; npm leaves its stamp alone when nothing changed, so it is touched.
up_to_date=()
npm_install() {
  local src=packaging/$1/package.json dir=build/$1
  if [ -f "$dir/node_modules/.package-lock.json" ] && [ "$dir/node_modules/.package-lock.json" -nt "$src" ]; then
    up_to_date+=("$dir")
    return
  fi
  say "installing the pinned npm packages of $src into $dir"
  mkdir -p "$dir"
  cp "$src" "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error
  touch "$dir/node_modules/.package-lock.json"
}
if ! command -v npm >/dev/null 2>&1; then
  warn "npm not found: the pinned MCP servers (packaging/npm/package.json) are not installed; carrying on"
else
  npm_install npm
  # The MCP conformance harness that the tests run (tests/conformance/run.sh) and the Node 22 it
  # needs, in a prefix of its own: the system's node is left as it is. Not for --quick: only the
  # tests use them.
  if [ -z "$quick" ]; then
    npm_install node22
    npm_install conformance
  fi
  # Playwright's MCP server for the browser tests (they drive Debian's chromium with it).
  npm_install playwright
  [ ${#up_to_date[@]} -eq 0 ] || say "npm packages up to date in ${up_to_date[*]}"
fi

# 3. Configure (only when needed) and build with the preset.
cache=$bin/CMakeCache.txt
if [ -f "$cache" ]; then
  generator=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache")
  home_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
  reason=""
  if [ "$generator" != "Ninja" ]; then
    reason="its generator is \"$generator\", not Ninja"
  elif [ -n "$home_dir" ] && [ "$(readlink -f "$home_dir" 2>/dev/null || true)" != "$root" ]; then
    reason="it was made for another source folder"
  fi
  if [ -n "$reason" ]; then
    say "wiping $rel/ ($reason); keeping the npm packages (build/npm, build/node22, build/conformance, build/playwright)"
    find "$bin" -mindepth 1 -maxdepth 1 ! -path "$root/build/npm" ! -path "$root/build/node22" \
      ! -path "$root/build/conformance" ! -path "$root/build/playwright" -exec rm -rf {} +
  fi
fi
if [ -f "$cache" ]; then
  say "$rel/ already configured"
else
  say "configuring $rel/ (preset $preset)"
  if [ -n "$quick" ]; then
    # Without debug information: a third less compiling on two cores. The folder keeps it for the
    # tests built later into it (a clean clone's test line compiles with it, as CI does).
    cmake --preset "$preset" -DOPPX_DEBUG_INFO=OFF
  else
    cmake --preset "$preset"
  fi
fi

if [ -n "$quick" ]; then
  # What `oppx demo` runs and nothing else; the tests, benchmarks, man pages and completions come
  # with the next run without --quick.
  say "building oppx and oppxd in $rel/ (preset $preset, --quick)"
  cmake --build --preset "$preset" --target oppx oppxd
  say "done: $rel/oppx is ready (packaging/bootstrap.sh without --quick builds the tests and the rest)"
  exit 0
fi
say "building $rel/ (preset $preset)"
cmake --build --preset "$preset"
if [ "$preset" = fuzz ]; then
  say "done: the fuzz targets are in $rel/ (fuzz/run.sh SECONDS runs them)"
else
  say "done: $rel/oppx is ready"
fi
