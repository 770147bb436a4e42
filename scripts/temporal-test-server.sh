#!/bin/sh
# Runs Temporal's time-skipping test server (the Java one from Maven Central, fetched by
# scripts/install-deps.sh) with the arguments @temporalio/testing gives an existing-path server:
# the port, then any extra flags.
lib="$(cd "$(dirname "$0")/.." && pwd)/.tools/temporal-test-server/lib"
if [ ! -d "$lib" ]; then
  echo "no Temporal test server in $lib: run scripts/install-deps.sh" >&2
  exit 1
fi
# A small heap: it holds a few test workflows, on a machine shared with the whole test stack.
exec java -Xms32m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$lib/*" io.temporal.testserver.TestServer "$@"
