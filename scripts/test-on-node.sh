#!/usr/bin/env bash
# Runs test suites on another Node major than the machine's (issue 29: CI tests the current LTS
# besides the machine's Node; docs/operations.md#supported-runtimes). Usage:
#
#   scripts/test-on-node.sh <major> [npm script…]      default scripts: test:sqlite test:e2e
#
# Node comes from the npm registry's `node-<os>-<arch>` package (the official binary and its headers),
# the only place a closed CI network can reach; it is unpacked under node_modules/.cache/latch-node
# (LATCH_NODE_CACHE moves it). A native addon built for another Node's ABI (better-sqlite3; argon2
# is N-API and loads on any) is rebuilt for this one against the package's headers, used for the run,
# kept in the cache for the next run, and the checkout's own build is put back on exit, however the
# run ends: the checkout works on the machine's Node again afterwards. Exits non-zero when any
# suite fails, so CI fails with it.
set -euo pipefail
cd "$(dirname "$0")/.."

major="${1:-}"
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/test-on-node.sh <node major> [npm script…]   e.g. scripts/test-on-node.sh 24" >&2
  exit 2
fi
shift
scripts=("$@")
[ ${#scripts[@]} -gt 0 ] || scripts=(test:sqlite test:e2e)

# The addons are swapped in place for the run: in a node_modules shared with other checkouts
# (a symlink), their runs on the machine's Node would break meanwhile.
if [ -L node_modules ] || [ ! -d node_modules ]; then
  echo "test-on-node: node_modules must be this checkout's own directory (run npm ci here): native addons are rebuilt in it for the run" >&2
  exit 2
fi

case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os="$(uname -s)" ;; esac
case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch="$(uname -m)" ;; esac
cache="${LATCH_NODE_CACHE:-$PWD/node_modules/.cache/latch-node}"
mkdir -p "$cache"

# Unpacks node-<os>-<arch>@<spec> into the cache and prints its directory. npm pack resolves the
# newest release of a major and keeps the tarball in npm's own cache.
unpack_node() {
  npm pack "node-$os-$arch@$1" --pack-destination "$cache" --json --silent >"$cache/pack.json"
  local version tarball
  read -r version tarball < <(node -e 'const [p] = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(p.version, p.filename)' "$cache/pack.json")
  if [ ! -x "$cache/v$version/bin/node" ]; then
    mkdir -p "$cache/v$version"
    tar -xzf "$cache/$tarball" -C "$cache/v$version" --strip-components=1
  fi
  rm -f "$cache/$tarball" "$cache/pack.json"
  echo "$cache/v$version"
}
nodedir="$(unpack_node "$major")"
version="${nodedir##*/v}"

# The headers addons are built against. Node 24.19 changed node::ObjectWrap in node_object_wrap.h,
# which an addon compiles into itself: built against 24.19 or later headers, better-sqlite3 12 aborts
# the process when the GC finalizes a Statement outside JavaScript ("Assertion failed: (env) !=
# nullptr" in RemoveEnvironmentCleanupHook; nodejs/node#65446, open), on any 24 runtime. Built
# against 24.18.1's it runs clean on the newest 24 (measured), like the prebuilt binaries
# better-sqlite3 12.11.1 published in June 2026, before 24.19 existed. What an operator does:
# docs/operations.md#supported-runtimes.
headers="${LATCH_NODE_HEADERS:-}"
if [ -z "$headers" ]; then
  if [ "$major" = 24 ]; then headers=24.18.1; else headers="$version"; fi
fi
headersdir="$nodedir"
[ "$headers" = "$version" ] || headersdir="$(unpack_node "$headers")"
export PATH="$nodedir/bin:$PATH"
[ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ] || {
  echo "test-on-node: $nodedir/bin/node is not Node $major" >&2
  exit 1
}
echo "test-on-node: Node $(node --version) from node-$os-$arch@$version ($nodedir), addons built against the headers of ${headersdir##*/}"

# Every addon the checkout built (build/Release/*.node) that this Node refuses for its ABI.
mismatched_addons() {
  find node_modules -path '*/build/Release/*.node' -not -path '*/obj.target/*' -not -path "node_modules/.cache/*" -print0 |
    xargs -0 -r node -e '
      for (const file of process.argv.slice(1)) {
        try { process.dlopen({ exports: {} }, require("path").resolve(file)); }
        catch (err) { if (/NODE_MODULE_VERSION|different Node\.js version/.test(err.message)) console.log(file); }
      }'
}

saved="$(mktemp -d)"
swapped=()
restore() {
  for file in "${swapped[@]}"; do
    mkdir -p "$(dirname "$file")"
    cp "$saved/$file" "$file"
  done
  [ ${#swapped[@]} -eq 0 ] || echo "test-on-node: put back the checkout's own build of ${swapped[*]}"
  rm -rf "$saved"
}
trap restore EXIT
# A plain SIGTERM or SIGINT would end bash without its EXIT trap: exit instead, so restore runs.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

mapfile -t addons < <(mismatched_addons)
for file in "${addons[@]}"; do
  package_dir="${file%%/build/Release/*}"
  package="${package_dir#node_modules/}"
  package_version="$(node -p "require('./$package_dir/package.json').version")"
  built="$nodedir/addons/headers-${headersdir##*/v}/$package@$package_version/$(basename "$file")"
  mkdir -p "$saved/$(dirname "$file")"
  cp "$file" "$saved/$file"
  swapped+=("$file")
  if [ ! -f "$built" ]; then
    echo "test-on-node: building $package $package_version for Node $version against the headers of ${headersdir##*/}"
    # From source against the package's headers: no prebuilt binary is fetched from outside the registry.
    log="$saved/rebuild-${package//\//+}.log"
    npm_config_nodedir="$headersdir" npm_config_build_from_source=true npm rebuild "$package" --foreground-scripts >"$log" 2>&1 || {
      cat "$log" >&2
      echo "test-on-node: could not build $package for Node $version (its output is above)" >&2
      exit 1
    }
    mkdir -p "$(dirname "$built")"
    cp "$file" "$built"
  else
    cp "$built" "$file"
  fi
done

left="$(mismatched_addons)"
[ -z "$left" ] || {
  echo "test-on-node: still built for another Node: $left" >&2
  exit 1
}

for script in "${scripts[@]}"; do
  echo "test-on-node: npm run $script on Node $version"
  started=$SECONDS
  npm run "$script"
  echo "test-on-node: npm run $script on Node $version passed in $((SECONDS - started)) s"
done
