#!/usr/bin/env bash
# npm start: install what is missing, build, then run the local stack and the platform.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/node-runtime.sh
. scripts/node-runtime.sh
hangar_use_node_lts "$PWD"
bash scripts/install-deps.sh
exec node dist/scripts/start.js "$@"
