#!/usr/bin/env bash
# Set-up for the Spark example's test (SparkTests), once: Java (Debian's openjdk-17-jre-headless,
# installed with apt when no java runs, as scripts/bootstrap.sh does for ffmpeg) and a Python
# virtual environment in .build/spark-venv with examples/spark/requirements.txt (PyPI: pyspark,
# pandas, pyarrow; reinstalled when that file changes). Prints the environment's python on its
# last line. Exits 2 when Java cannot be installed (the test then skips, saying why), 1 when
# anything else fails (the test fails: the example's own requirements must install).
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
apt_install() {  # apt_install EXIT-STATUS-ON-FAILURE PACKAGE...
    local status=$1; shift
    echo "spark-test-setup: installing $*" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null; } \
        || { echo "spark-test-setup: cannot install $* with apt" >&2; exit "$status"; }
}
java -version >/dev/null 2>&1 || apt_install 2 openjdk-17-jre-headless
java -version >/dev/null 2>&1 || { echo "spark-test-setup: java does not run after installing openjdk-17-jre-headless" >&2; exit 2; }

venv=.build/spark-venv
requirements=examples/spark/requirements.txt
ready() {
    [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$venv/requirements.installed" \
        && "$venv/bin/python" -c "import pyspark, pandas, pyarrow" 2>/dev/null
}
if ! ready; then
    rm -rf "$venv"
    mkdir -p .build
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        apt_install 1 python3-venv
        python3 -m venv "$venv" || { echo "spark-test-setup: python3 -m venv failed" >&2; exit 1; }
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements" >&2 \
        || { echo "spark-test-setup: cannot install $requirements from PyPI" >&2; exit 1; }
    cp "$requirements" "$venv/requirements.installed"
    ready || { echo "spark-test-setup: pyspark, pandas or pyarrow does not import after installing" >&2; exit 1; }
fi
echo "$(pwd)/$venv/bin/python"
