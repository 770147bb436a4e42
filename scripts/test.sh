#!/usr/bin/env bash
# npm test [-- jest arguments]: install what is missing, build and type-check, lint, then jest.
# The jest global set-up starts PostgreSQL, ClickHouse and Temporal on test ports with data in
# .data-test (not at all when only test/unit files are selected).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/node-runtime.sh
. scripts/node-runtime.sh
hangar_use_node_lts "$PWD"
bash scripts/install-deps.sh
# The floors and the code's shape, before any suite: ESLint (typescript-eslint, functions of at
# most 80 lines) and dependency-cruiser (.dependency-cruiser.js: imports only point down, no cycles).
npm run -s lint

args=()
# One process by default: integration tests share the services and the machine has 2 cores, so
# parallel workers mostly add start-up cost and contention. -w/--maxWorkers opts out.
case " $* " in
  *" -i "* | *" --runInBand "* | *" -w "* | *" --maxWorkers"*) ;;
  *) args+=(--runInBand) ;;
esac
# In CI a handle some test forgot to close must not hold the run until the job's time limit.
if [ -n "${CI:-}" ]; then args+=(--forceExit); fi
exec npx jest "${args[@]}" "$@"
