#!/usr/bin/env bash
# Installs the browser of the dashboard tests: Debian's Chromium, when /usr/bin/chromium is missing.
# Idempotent and quiet: does nothing when it is there. Needs root (CI and the dev machines run as root).
# A test tool's own browser download cannot work here (only the npm and Debian registries are reached).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi

echo "chromium not found: installing it from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Without recommends (desktop notification daemons, printing...), but with fonts to draw text.
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fonts-liberation >/dev/null
/usr/bin/chromium --version
