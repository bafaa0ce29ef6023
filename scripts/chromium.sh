#!/usr/bin/env bash
# Finds Chromium for the browser tests and prints its path: CHROMIUM_PATH if set, else
# Debian's chromium, which it installs (apt-get, as root or with passwordless sudo) when the
# machine does not have it yet, as make test needs it.
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  [ -x "$CHROMIUM_PATH" ] || { echo "chromium.sh: CHROMIUM_PATH=$CHROMIUM_PATH is not executable" >&2; exit 1; }
  echo "$CHROMIUM_PATH"; exit 0
fi
find_chromium() {
  for c in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
    if [ -x "$c" ]; then echo "$c"; return 0; fi
  done
  return 1
}
if path=$(find_chromium); then echo "$path"; exit 0; fi
echo "chromium.sh: Chromium not found; installing Debian's chromium package" >&2
if ! command -v apt-get >/dev/null; then
  echo "chromium.sh: no apt-get here: install Chromium and set CHROMIUM_PATH" >&2; exit 1
fi
if [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2 || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2; }
elif sudo -n true 2>/dev/null; then
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2 || { sudo apt-get update >&2 && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2; }
else
  echo "chromium.sh: cannot install Chromium without root: sudo apt-get install chromium, or set CHROMIUM_PATH" >&2; exit 1
fi
find_chromium
