#!/usr/bin/env bash
# Set-up for the `yolo serve` tests' real clients, once: curl and Chromium (Debian packages,
# installed with apt when missing, as scripts/bootstrap.sh does for ffmpeg) and a Python virtual
# environment in .build/serve-venv with the clients of scripts/serve/requirements.txt (PyPI).
# Prints the environment's python on its last line; exits 2 when something cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
apt_install() {
    echo "serve-test-setup: installing $*" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null; } \
        || { echo "serve-test-setup: cannot install $* with apt" >&2; exit 2; }
}
need=()
command -v curl >/dev/null || need+=(curl)
command -v chromium >/dev/null || need+=(chromium)
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"

venv=.build/serve-venv
ready() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import deepstack.core, websocket, PIL" 2>/dev/null; }
if ! ready; then
    rm -rf "$venv"
    mkdir -p .build
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv" || { echo "serve-test-setup: python3 -m venv failed" >&2; exit 2; }
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r scripts/serve/requirements.txt >&2 \
        || { echo "serve-test-setup: cannot install scripts/serve/requirements.txt from PyPI" >&2; exit 2; }
    ready || { echo "serve-test-setup: the clients do not import after installing" >&2; exit 2; }
fi
echo "$(pwd)/$venv/bin/python"
