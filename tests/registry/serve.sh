#!/usr/bin/env bash
# An in-memory OCI registry for the registry tests or for trying `kubectl kyrec --registry` by hand:
#
#   tests/registry/serve.sh            # prints `ready 127.0.0.1:PORT`, serves plain HTTP until SIGTERM/Ctrl-C
#
# Builds the program if needed (tests/registry/build.py, cached in ~/.cache/kubectl-kyrec/registry). Fill it
# with tests/registry/push.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=$(command -v python3 || command -v python)
bin=$("$python" "$here/build.py")
# exec: SIGTERM sent to this script's pid reaches the registry itself
exec "$bin" serve "$@"
