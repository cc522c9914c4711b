#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what it needs, then runs pytest.
# Postgres: the tests start the embedded server themselves (or use WAYSTONE_DATABASE_URL).
# Chromium (Debian's) is for the dashboard's browser test; Playwright downloads nothing.
# Node and npm (Debian's) run the JavaScript clients' tests (tests/js, packages from npm).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
    sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
python3 -m pip install -q -e '.[test]'
# The Agent Chat UI's test runs the app with Node.js: its packages (from the npm registry)
# are installed here, once per version of the app, into a cache kept between runs.
python3 -m tests.support.chat_app
# Load only the plugins the suite uses: a shared interpreter may carry others
# (pytest-benchmark, for one, warns under xdist, and warnings are errors here).
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
python3 -m pytest -p xdist.plugin -p pytest_timeout "$@"
