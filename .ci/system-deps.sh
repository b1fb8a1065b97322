#!/usr/bin/env bash
# Installs the Debian packages the test suite needs, only those that are missing.
set -euo pipefail
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)  # health: a private Redis that comes back
command -v pdftoppm >/dev/null 2>&1 || need+=(poppler-utils)  # FEL: look at rendered pages
command -v zbarimg >/dev/null 2>&1 || need+=(zbar-tools)      # FEL: decode the PDF's QR code
command -v npm >/dev/null 2>&1 || need+=(npm)                  # MCP conformance suite (tests/conformance)
command -v msgfmt >/dev/null 2>&1 || need+=(gettext)       # i18n: the .mo is compiled from the .po
[ -x /usr/bin/chromium ] || need+=(chromium)                     # dashboard: browser tests (Playwright)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  echo "installing Debian packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
