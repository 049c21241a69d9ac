#!/usr/bin/env bash
# Install the "anchor" tools h2lab is compared against / tested with:
#   h2load + nghttpd (nghttp2), nginx (http_v2 built in), apache2 (mod_http2),
#   h2o, wrk, curl, openssl, and h2spec (Go).
# Idempotent: skips anything already installed. Packaged services are never left
# running (tests start their own instances on ports chosen at run time).
# Environment:
#   H2SPEC_VERSION  h2spec module version for `go install` (default v2.2.1+incompatible, what @latest resolves to)
#   H2SPEC_BIN      where to put h2spec (default /usr/local/bin/h2spec)
#   SKIP_H2SPEC=1   do not build h2spec
#   QUIC_GO_VERSION quic-go version of the HTTP/3 example client (default v0.65.0),
#   QUIC_GO_CLIENT_BIN where to put it (default /usr/local/bin/quic-go-client), SKIP_QUIC_GO=1 skips
#   AIOQUIC_VERSION aioquic (PyPI; the server's HTTP/3 0-RTT interop tests) version (default 1.7.2),
#   H2LAB_PYTHON    the Python it is installed for (default python3), SKIP_AIOQUIC=1 skips
#   INSTALL_OHA_H3=1  also build oha with HTTP/3 (slow; only the benchmark uses it)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
H2SPEC_VERSION=${H2SPEC_VERSION:-v2.2.1+incompatible}
H2SPEC_BIN=${H2SPEC_BIN:-/usr/local/bin/h2spec}

log() { printf '==> %s\n' "$*" >&2; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo -n); fi

# Debian bookworm package names. "nginx" is the real binary package (nginx-light/
# -core/-full are only meta-packages adding dynamic modules); --with-http_v2_module
# is compiled in. apache2-bin ships mod_http2.so and mod_ssl.so.
APT_PACKAGES=(
  nghttp2-client   # h2load, nghttp
  nghttp2-server   # nghttpd
  nginx
  apache2
  h2o
  wrk
  curl
  openssl
  ca-certificates
  chromium         # headless browser: the lab report tests render index.html
  caddy            # Caddy 2.6: an HTTP/3 server (quic-go) for the bench --h3 interop tests
)
SERVICES=(nginx apache2 h2o caddy)

is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  is_installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  # Keep maintainer scripts from starting services during the install
  # (Docker images usually already have such a policy-rc.d; keep theirs if present).
  policy_added=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${SUDO[@]}" chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  cleanup_policy() { if [ "$policy_added" = 1 ]; then "${SUDO[@]}" rm -f /usr/sbin/policy-rc.d; fi; }
  trap cleanup_policy EXIT
  log "apt-get install ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  cleanup_policy
  trap - EXIT
else
  log "apt packages already installed"
fi

# Make sure no packaged service holds a port (e.g. nginx/apache2 on :80, h2o on :80/:443).
for s in "${SERVICES[@]}"; do
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    "${SUDO[@]}" systemctl disable --now "$s" >/dev/null 2>&1 || true
  else
    if [ -x "/etc/init.d/$s" ]; then
      "${SUDO[@]}" "/etc/init.d/$s" stop >/dev/null 2>&1 || true
    fi
    if command -v update-rc.d >/dev/null 2>&1; then
      "${SUDO[@]}" update-rc.d "$s" disable >/dev/null 2>&1 || true
    fi
  fi
done
# Belt and braces: a packaged daemon started outside the init system.
for pidfile in /run/nginx.pid /run/apache2/apache2.pid /run/h2o.pid; do
  if [ -s "$pidfile" ]; then
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then "${SUDO[@]}" kill "$pid" || true; fi
  fi
done

# Sanity checks of the features the tests rely on.
nginx -V 2>&1 | grep -q -- '--with-http_v2_module' || { echo "nginx lacks http_v2 module" >&2; exit 1; }
[ -f /usr/lib/apache2/modules/mod_http2.so ] || { echo "apache2 lacks mod_http2" >&2; exit 1; }
for b in h2load nghttpd nghttp nginx apache2 h2o wrk curl openssl; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || { echo "missing binary: $b" >&2; exit 1; }
done

# h2spec (Go). Go lives at /usr/local/go/bin on the CI machine.
if [ "${SKIP_H2SPEC:-0}" != 1 ]; then
  if [ -x "$H2SPEC_BIN" ]; then
    log "h2spec already at $H2SPEC_BIN"
  elif command -v h2spec >/dev/null 2>&1; then
    H2SPEC_BIN=$(command -v h2spec)
    log "h2spec already at $H2SPEC_BIN"
  else
    GO=$(command -v go || true)
    [ -n "$GO" ] || GO=/usr/local/go/bin/go
    [ -x "$GO" ] || { echo "go not found (looked in PATH and /usr/local/go/bin)" >&2; exit 1; }
    gobin=$(mktemp -d)
    log "go install github.com/summerwind/h2spec/cmd/h2spec@$H2SPEC_VERSION"
    # -p=1: the CI machine has 2 cores shared with other jobs.
    GOBIN="$gobin" GOFLAGS="${GOFLAGS:-} -p=1" "$GO" install \
      "github.com/summerwind/h2spec/cmd/h2spec@$H2SPEC_VERSION"
    "${SUDO[@]}" install -m 755 "$gobin/h2spec" "$H2SPEC_BIN"
    rm -rf "$gobin"
  fi
  echo "h2spec: $H2SPEC_BIN"
fi

# quic-go's example HTTP/3 client (the server's HTTP/3 interop tests), installed as
# quic-go-client (its own name, `client`, is too generic for PATH).
QUIC_GO_VERSION=${QUIC_GO_VERSION:-v0.65.0}
QUIC_GO_CLIENT_BIN=${QUIC_GO_CLIENT_BIN:-/usr/local/bin/quic-go-client}
if [ "${SKIP_QUIC_GO:-0}" != 1 ]; then
  if [ -x "$QUIC_GO_CLIENT_BIN" ]; then
    log "quic-go client already at $QUIC_GO_CLIENT_BIN"
  else
    GO=$(command -v go || true)
    [ -n "$GO" ] || GO=/usr/local/go/bin/go
    [ -x "$GO" ] || { echo "go not found (looked in PATH and /usr/local/go/bin)" >&2; exit 1; }
    gobin=$(mktemp -d)
    log "go install github.com/quic-go/quic-go/example/client@$QUIC_GO_VERSION"
    GOBIN="$gobin" GOFLAGS="${GOFLAGS:-} -p=1" "$GO" install \
      "github.com/quic-go/quic-go/example/client@$QUIC_GO_VERSION"
    "${SUDO[@]}" install -m 755 "$gobin/client" "$QUIC_GO_CLIENT_BIN"
    rm -rf "$gobin"
  fi
  echo "quic-go client: $QUIC_GO_CLIENT_BIN"
fi

# aioquic (an independent QUIC + HTTP/3 stack with session tickets and 0-RTT), for
# crates/server/tests/zero_rtt_aioquic.rs (its client script is tests/aioquic/zero_rtt.py).
AIOQUIC_VERSION=${AIOQUIC_VERSION:-1.7.2}
PYTHON=${H2LAB_PYTHON:-python3}
if [ "${SKIP_AIOQUIC:-0}" != 1 ]; then
  if "$PYTHON" -c "import aioquic, sys; sys.exit(aioquic.__version__ != '$AIOQUIC_VERSION')" 2>/dev/null; then
    log "aioquic $AIOQUIC_VERSION already installed for $PYTHON"
  else
    command -v "$PYTHON" >/dev/null 2>&1 || { echo "$PYTHON not found (set H2LAB_PYTHON)" >&2; exit 1; }
    log "$PYTHON -m pip install aioquic==$AIOQUIC_VERSION"
    # A distribution's own Python refuses pip installs (PEP 668, EXTERNALLY-MANAGED):
    # then into its site-packages all the same (a wheel with no Debian package behind it).
    "$PYTHON" -m pip install -q --disable-pip-version-check "aioquic==$AIOQUIC_VERSION" ||
      "$PYTHON" -m pip install -q --disable-pip-version-check --break-system-packages \
        "aioquic==$AIOQUIC_VERSION"
  fi
  echo "aioquic: $("$PYTHON" -c 'import aioquic; print(aioquic.__version__)')"
fi

# Optional, slow (about 20 minutes to build): oha with HTTP/3, for bench/h3-vs-caddy.sh.
# INSTALL_OHA_H3=1 turns it on; no test requires it.
if [ "${INSTALL_OHA_H3:-0}" = 1 ]; then
  log "cargo install oha --locked --features http3"
  cargo install oha --locked --features http3
fi

log "anchors ready: $(h2load --version 2>&1 | head -n1); nginx $(nginx -v 2>&1 | sed 's/.*\///'); $(apache2 -v 2>/dev/null | head -n1 | sed 's/Server version: //'); $(h2o --version 2>&1 | head -n1); $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2)"
