#!/bin/sh
# kubectl-kyrec launcher (release archive): runs kyrec from a virtual environment made on first use.
#
# kyrec depends on compiled extensions (cel-expr-python, the CEL engine, and PyYAML's C loader) that differ
# per OS, CPU and Python version and cannot be imported from inside a zip file, so the archive carries
# kyrec's own wheel and this launcher lets pip pick the right binary dependencies on this machine, once.
set -eu
VERSION="@VERSION@"
WHEEL="@WHEEL@"
ENTRY="$(basename "$0")"
here="$(cd "$(dirname "$0")" && pwd -P)"
# krew installs a symlink to this file: find the archive's directory through it
if [ -L "$0" ]; then
    target="$(readlink "$0")"
    case "$target" in
        /*) here="$(cd "$(dirname "$target")" && pwd -P)" ;;
        *) here="$(cd "$(dirname "$0")/$(dirname "$target")" && pwd -P)" ;;
    esac
fi
home="${KUBECTL_KYREC_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-kyrec}"
venv="$home/$VERSION"
if [ ! -f "$venv/.kyrec-installed" ]; then
    python="${KUBECTL_KYREC_PYTHON:-python3}"
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "error: kubectl-kyrec needs Python 3.11 or newer as $python (set KUBECTL_KYREC_PYTHON)" >&2
        exit 3
    fi
    echo "kubectl-kyrec: first run: installing kyrec $VERSION into $venv" >&2
    # a virtual environment cannot be moved (its scripts name their interpreter by path): it is made in
    # place, and marked installed only once pip finished, so an interrupted install starts again
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here/$WHEEL" >&2
    touch "$venv/.kyrec-installed"
fi
exec "$venv/bin/$ENTRY" "$@"
