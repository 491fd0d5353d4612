#!/usr/bin/env bash
# Installs the browser of the dashboard tests (Debian's Chromium) when /usr/bin/chromium is missing.
# Kept for its old name: scripts/setup.sh is the one home of installs (`npm test` runs it).
exec bash "$(dirname "$0")/setup.sh" browser
