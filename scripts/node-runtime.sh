# Sourced by the project's scripts (start, test, install-deps, with-node): puts a maintained
# Node.js LTS first on PATH for everything they run. Node 20 reached its end of life in April 2026
# and dependencies already ask for 22+; Hangar runs on the 24 LTS line (supported until April
# 2028). A machine whose node is that line or newer keeps its own; otherwise the official binary
# of the npm registry's node-linux-<arch> package, checked against the integrity pinned here, is
# unpacked once into .tools/node/<version>/ (about 50 MB, a few seconds).
HANGAR_NODE_VERSION=24.21.0

hangar_node_integrity() {
  case "$1" in
    x64) echo 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==' ;;
    arm64) echo 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==' ;;
    *) return 1 ;;
  esac
}

hangar_use_node_lts() {
  local root="$1" major="${HANGAR_NODE_VERSION%%.*}" have arch dir tmp integrity
  have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$have" -ge "$major" ]; then return 0; fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) echo "[node] ERROR: no Node.js $HANGAR_NODE_VERSION binary for $(uname -m); install Node.js >= $major yourself" >&2; return 1 ;;
  esac
  dir="$root/.tools/node/$HANGAR_NODE_VERSION"
  if [ ! -x "$dir/bin/node" ]; then
    echo "[node] the machine's node is $(node --version 2>/dev/null || echo missing): fetching Node.js $HANGAR_NODE_VERSION (LTS) from the npm registry into .tools/node/" >&2
    tmp=$(mktemp -d)
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$HANGAR_NODE_VERSION" >/dev/null); then
      rm -rf "$tmp"
      echo "[node] ERROR: npm pack node-linux-$arch@$HANGAR_NODE_VERSION failed" >&2
      return 1
    fi
    # The machine's node (npm's own) hashes it: nothing else need be installed yet.
    integrity=$(node -e 'process.stdout.write("sha512-" + require("crypto").createHash("sha512").update(require("fs").readFileSync(process.argv[1])).digest("base64"))' "$tmp"/node-linux-*.tgz)
    if [ "$integrity" != "$(hangar_node_integrity "$arch")" ]; then
      rm -rf "$tmp"
      echo "[node] ERROR: node-linux-$arch@$HANGAR_NODE_VERSION does not match its pinned integrity" >&2
      return 1
    fi
    tar -xzf "$tmp"/node-linux-*.tgz -C "$tmp" package/bin/node package/LICENSE
    mkdir -p "$dir/bin"
    mv "$tmp/package/LICENSE" "$dir/LICENSE"
    # Moved in last: a folder with bin/node is a complete one.
    mv "$tmp/package/bin/node" "$dir/bin/node"
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
}
