#!/usr/bin/env bash
# A real kube-apiserver for trying kyrec by hand or from another test harness (docs/testing.md):
#
#   tests/realapi/serve.sh --kubeconfig FILE [--log FILE] [SEED.yaml ...]
#
# Builds the realapi program if needed (tests/realapi/build.py, cached in ~/.cache/kubectl-kyrec/realapi),
# starts kube-apiserver + etcd on 127.0.0.1, installs Kyverno's CRDs from ../shared/crds/kyverno beside the
# project (read in place; KYREC_SHARED names another shared folder), applies the seeds, writes FILE with the
# contexts `admin` and `restricted`, prints `ready` on stdout and serves until SIGTERM or Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shared=${KYREC_SHARED:-$root/../shared}
crds=$shared/crds/kyverno
if [ ! -d "$crds" ]; then
    echo "serve.sh: $crds is missing (Kyverno's CRDs; the shared folder sits beside the project)" >&2
    exit 1
fi
case " $* " in
    *" --kubeconfig "* | *" --kubeconfig="* | *" -kubeconfig "* | *" -kubeconfig="*) ;;
    *) echo "usage: $0 --kubeconfig FILE [--log FILE] [SEED.yaml ...]" >&2; exit 2 ;;
esac
python=$(command -v python3 || command -v python)
bin=$("$python" "$here/build.py" server)
# exec: SIGTERM sent to this script's pid reaches the server itself
exec "$bin" serve --crds "$crds" "$@"
