#!/usr/bin/env bash
# Runs a command with the project's Node.js LTS first on PATH (scripts/node-runtime.sh), for the
# npm scripts a user calls directly (benchmarks, billing:check, nodes): `bash scripts/with-node.sh node dist/...`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/node-runtime.sh
. "$root/scripts/node-runtime.sh"
hangar_use_node_lts "$root"
exec "$@"
