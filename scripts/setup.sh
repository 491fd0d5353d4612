#!/usr/bin/env bash
# The one home of "what a fresh machine lacks": run first by `npm start`, `npm test`, `npm run
# test:fast` and scripts/install-browser.sh, so the README's commands work on a Debian machine that
# has only Node.js.
#
#   bash scripts/setup.sh demo      redis-server, unless REDIS_URL points at your own Redis
#   bash scripts/setup.sh fast      redis-server (the tests start private ones)
#   bash scripts/setup.sh test      redis-server, Chromium (the dashboard's browser tests), python3 and a
#                                   JDK (the Python and Java clients' tests)
#   bash scripts/setup.sh browser   Chromium only
#
# Quiet when everything is there. When something is missing: as root on Debian it is installed from
# Debian packages (one apt-get update, one apt-get install); otherwise, or with SANDGLASS_NO_INSTALL=1,
# the script stops at once (exit 1) and prints the one command to run: never a stack trace later.
set -euo pipefail

purpose="${1:-}"
case "$purpose" in
  demo) needs=(redis-server); for_what='npm start'; [ -n "${REDIS_URL:-}" ] && needs=() ;;
  fast) needs=(redis-server); for_what='npm run test:fast' ;;
  test) needs=(redis-server chromium python3 javac); for_what='npm test' ;;
  browser) needs=(chromium); for_what="the dashboard's browser tests" ;;
  *) echo "usage: bash scripts/setup.sh demo|fast|test|browser" >&2; exit 2 ;;
esac

# A Chromium elsewhere can be named with CHROMIUM_PATH (the dashboard test reads it too).
chromium_path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -n "${CHROMIUM_PATH:-}" ] && [ ! -x "$CHROMIUM_PATH" ] && [[ " ${needs[*]} " == *" chromium "* ]]; then
  echo "sandglass: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable file (needed by $for_what)." >&2
  exit 1
fi

absent=()  # what is missing, by name
missing=() # the Debian packages that bring it
for need in "${needs[@]}"; do
  case "$need" in
    redis-server)
      if command -v redis-server >/dev/null 2>&1; then
        # "Redis server v=7.0.15 sha=..." -> 7. Scripts use commands added in Redis 7.0.
        version="$(redis-server --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')"
        if [ "${version%%.*}" -lt 7 ] 2>/dev/null; then
          echo "sandglass: redis-server $version is on the PATH, but sandglass needs Redis >= 7.0." >&2
          echo "Install Redis 7 or later (https://redis.io/docs/latest/operate/oss_and_stack/install/), then try again." >&2
          exit 1
        fi
      else
        absent+=(redis-server)
        missing+=(redis-server)
      fi
      ;;
    chromium)
      # Without recommends (desktop notification daemons, printing...), but with fonts to draw text.
      if [ ! -x "$chromium_path" ]; then
        absent+=("$chromium_path")
        missing+=(chromium fonts-dejavu-core fonts-liberation)
      fi
      ;;
    python3)
      # The Python client supports 3.9 and later; its tests run on the python3 of the PATH.
      if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' >/dev/null 2>&1; then
        absent+=(python3)
        missing+=(python3)
      fi
      ;;
    javac)
      # The Java client is compiled with javac --release 17: a JDK 17 or later.
      if ! command -v javac >/dev/null 2>&1; then
        absent+=(javac)
        missing+=(openjdk-17-jdk-headless)
      fi
      ;;
  esac
done

[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && [ "${SANDGLASS_NO_INSTALL:-}" != 1 ] && command -v apt-get >/dev/null 2>&1; then
  echo "sandglass: installing ${missing[*]} from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

names="${absent[*]}"
echo "sandglass: ${names// / and } not found (needed by $for_what)." >&2
if [ -f /etc/debian_version ]; then
  sudo=''
  [ "$(id -u)" -eq 0 ] || sudo='sudo '
  echo "Run this once, then try again:" >&2
  echo "  ${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${missing[*]}" >&2
else
  echo "Install ${missing[*]} with your system's package manager (Redis >= 7.0), then try again." >&2
fi
exit 1
