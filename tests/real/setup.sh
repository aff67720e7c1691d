#!/usr/bin/env bash
# Installs the real programs the tests run, from the package registries only: for the
# real-programs tier (tests/integration/real_programs.rs) PostgreSQL 15 (server, psql, pg_dump,
# pg_restore) from Debian, and
# pgAdmin 4 at the default image's version from PyPI, in a venv of Debian's python3 so that the
# pgAdmin uid (5050) can run it (pyenv's interpreter lives under /root). Idempotent: a second
# run finds everything in place and takes a second. Also promtool, for the alert rule tests, and
# barman-cloud with moto's S3 server for the evidence agent's tier.
set -euo pipefail
cd "$(dirname "$0")/../.."

# pgAdmin 4's version in the default image (docker.io/dpage/pgadmin4:9.10), and the gunicorn
# the image's Dockerfile installs next to it.
PGADMIN_VERSION=9.10
GUNICORN_VERSION=23.0.0
VENV=target/real-programs/venv

# promtool (Debian's prometheus) for the alert rule tests of deploy/monitoring
# (tests/integration/runtime_alerts.rs).
if [ ! -x /usr/lib/postgresql/15/bin/postgres ] || ! command -v unshare >/dev/null \
   || ! /usr/bin/python3 -m venv --help >/dev/null 2>&1 || ! command -v promtool >/dev/null \
   || ! command -v openssl >/dev/null || ! command -v curl >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql-15 postgresql-client-15 python3-venv util-linux prometheus openssl curl \
    >/dev/null
fi

# Debian's slapd (OpenLDAP) for pgAdmin's LDAP sign-in in the real tier (tests/real/run.py
# starts it with a configuration of its own): about 11 s, nothing once installed.
if ! [ -x /usr/sbin/slapd ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slapd >/dev/null
fi

# Debian's chromium for the console's browser tests (console/tests/browser.rs, driven by
# playwright-core from tests/browser): a browser download cannot work here. About 80 s on a
# fresh machine (apt-get update included), nothing once installed.
if ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi

stamp="$VENV/.pgtoolbox-installed-$PGADMIN_VERSION-$GUNICORN_VERSION"
if [ ! -e "$stamp" ]; then
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "pgadmin4==$PGADMIN_VERSION" "gunicorn==$GUNICORN_VERSION"
  # The image's venv is /venv: its scripts (gunicorn) must name /venv's interpreter, as the
  # venv is mounted there in the emulated containers.
  abs="$(cd "$VENV" && pwd)"
  for f in "$VENV"/bin/*; do
    if [ -f "$f" ] && head -c 2 "$f" | grep -q '#!'; then
      sed -i "1s|^#!$abs/bin/python[0-9.]*\$|#!/venv/bin/python3|" "$f"
    fi
  done
  touch "$stamp"
fi
# The evidence agent's real tier (tests/integration/evidence_real.rs): barman-cloud (the
# barman-cloud-* commands CloudNativePG's barman-cloud plugin runs) and moto's S3 server, in a
# venv of their own (moto's Flask must not meet pgAdmin's pins). Only moto's S3 extra and the
# two packages its server needs, not `moto[server]`, which pulls every AWS service's deps.
BARMAN_VERSION=3.19.1
MOTO_VERSION=5.2.6
BARMAN_VENV=target/real-programs/barman-venv
barman_stamp="$BARMAN_VENV/.pgtoolbox-installed-$BARMAN_VERSION-$MOTO_VERSION"
if [ ! -e "$barman_stamp" ]; then
  rm -rf "$BARMAN_VENV"
  /usr/bin/python3 -m venv "$BARMAN_VENV"
  "$BARMAN_VENV/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "barman[cloud]==$BARMAN_VERSION" "moto[s3]==$MOTO_VERSION" "flask==3.1.3" "flask-cors==6.0.5"
  touch "$barman_stamp"
fi
echo "real programs ready: $("$VENV/bin/python3" -c 'import importlib.metadata as m; print("pgadmin4", m.version("pgadmin4"))'), barman $BARMAN_VERSION, moto $MOTO_VERSION, $(/usr/lib/postgresql/15/bin/postgres --version)"
