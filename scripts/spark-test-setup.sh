#!/usr/bin/env bash
# Set-up for the Spark example's test, once: Java (Debian's openjdk-17-jre-headless, installed
# with apt when no java runs, as scripts/bootstrap.sh does for ffmpeg) and a Python virtual
# environment in .build/spark-venv with examples/spark/requirements.txt (PyPI: pyspark, pandas,
# pyarrow). Prints the environment's python on its last line; exits 2 when something cannot be
# installed (the test then skips, saying why).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
apt_install() {
    echo "spark-test-setup: installing $*" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null; } \
        || { echo "spark-test-setup: cannot install $* with apt" >&2; exit 2; }
}
java -version >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
java -version >/dev/null 2>&1 || { echo "spark-test-setup: java does not run after installing openjdk-17-jre-headless" >&2; exit 2; }

venv=.build/spark-venv
ready() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pyspark, pandas, pyarrow" 2>/dev/null; }
if ! ready; then
    rm -rf "$venv"
    mkdir -p .build
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv" || { echo "spark-test-setup: python3 -m venv failed" >&2; exit 2; }
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r examples/spark/requirements.txt >&2 \
        || { echo "spark-test-setup: cannot install examples/spark/requirements.txt from PyPI" >&2; exit 2; }
    ready || { echo "spark-test-setup: pyspark does not import after installing" >&2; exit 2; }
fi
echo "$(pwd)/$venv/bin/python"
