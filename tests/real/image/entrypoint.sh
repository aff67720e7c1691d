#!/usr/bin/env bash
# Our emulation of the pgAdmin 9.10 image's /entrypoint.sh (pgadmin-org/pgadmin4,
# pkg/docker/entrypoint.sh at REL-9_10), step by step, for the parts a rendered Pod reaches.
# Written from a reading of it; docs/testing.md says what differs. The shell quirks are kept on
# purpose: they decide what a rendered value must look like.

# Values may come from files (`<VAR>_FILE`), as the image allows for two variables.
from_file() {
  local var="$1" file_var="$1_FILE"
  if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    echo "error: both $var and $file_var are set (but are exclusive)" >&2
    exit 1
  fi
  if [ -z "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    export "$var"="$(< "${!file_var}")"
  fi
  unset "$file_var"
}
if [ -n "${PGADMIN_CONFIG_CONFIG_DATABASE_URI_FILE:-}" ]; then
  from_file PGADMIN_CONFIG_CONFIG_DATABASE_URI
fi
from_file PGADMIN_DEFAULT_PASSWORD

# config_distro.py, on first start only (the image ships it empty): the image's defaults, then
# one line `<NAME> = <value>` per PGADMIN_CONFIG_<NAME>, through an unquoted echo (so a value
# is word-split, globbed, and must be Python).
export CONFIG_DISTRO_FILE_PATH="${PGADMIN_CUSTOM_CONFIG_DISTRO_FILE:-/pgadmin4/config_distro.py}"
if [ ! -s "$CONFIG_DISTRO_FILE_PATH" ]; then
  {
    echo "CA_FILE = '/etc/ssl/certs/ca-certificates.crt'"
    echo "LOG_FILE = '/dev/null'"
    echo "HELP_PATH = '../../docs'"
    echo "DEFAULT_BINARY_PATHS = {'pg': '/usr/local/pgsql-18', 'pg-18': '/usr/local/pgsql-18', 'pg-17': '/usr/local/pgsql-17', 'pg-16': '/usr/local/pgsql-16', 'pg-15': '/usr/local/pgsql-15', 'pg-14': '/usr/local/pgsql-14', 'pg-13': '/usr/local/pgsql-13'}"
  } > "$CONFIG_DISTRO_FILE_PATH"
  for var in $(env | grep "^PGADMIN_CONFIG_" | cut -d "=" -f 1); do
    # shellcheck disable=SC2086,SC2046
    echo ${var#PGADMIN_CONFIG_} = $(eval "echo \$$var") >> "$CONFIG_DISTRO_FILE_PATH"
  done
fi

# Whether a settings database already holds pgAdmin's schema: the URI is pasted, unquoted, into
# a Python call (a failure here prints nothing, which counts as "exists").
external_exists="False"
if [ -n "${PGADMIN_CONFIG_CONFIG_DATABASE_URI:-}" ]; then
  # shellcheck disable=SC2086
  # (The quotes around the expansion close and reopen the string: it is word-split.)
  external_exists=$(cd /pgadmin4/pgadmin/utils && /venv/bin/python3 -c "from check_external_config_db import check_external_config_db; val = check_external_config_db("${PGADMIN_CONFIG_CONFIG_DATABASE_URI}"); print(val)")
fi

if [ ! -f /var/lib/pgadmin/pgadmin4.db ] && [ "$external_exists" = "False" ]; then
  if [ -z "${PGADMIN_DEFAULT_EMAIL:-}" ] || [ -z "${PGADMIN_DEFAULT_PASSWORD:-}" ]; then
    echo 'You need to define the PGADMIN_DEFAULT_EMAIL and PGADMIN_DEFAULT_PASSWORD or PGADMIN_DEFAULT_PASSWORD_FILE environment variables.'
    exit 1
  fi
  # The initial e-mail is validated with the e-mail settings given as PGADMIN_CONFIG_*.
  email_config="{'CHECK_EMAIL_DELIVERABILITY': ${PGADMIN_CONFIG_CHECK_EMAIL_DELIVERABILITY:-False}, 'ALLOW_SPECIAL_EMAIL_DOMAINS': ${PGADMIN_CONFIG_ALLOW_SPECIAL_EMAIL_DOMAINS:-[]}, 'GLOBALLY_DELIVERABLE': ${PGADMIN_CONFIG_GLOBALLY_DELIVERABLE:-True}}"
  valid=$(cd /pgadmin4/pgadmin/utils && /venv/bin/python3 -c "from validation_utils import validate_email; val = validate_email('${PGADMIN_DEFAULT_EMAIL}', ${email_config}); print(val)")
  if echo "$valid" | grep "False" > /dev/null; then
    echo "'${PGADMIN_DEFAULT_EMAIL}' does not appear to be a valid email address. Please reset the PGADMIN_DEFAULT_EMAIL environment variable and try again."
    echo "Validation output: ${valid}"
    exit 1
  fi
  cd /pgadmin4 || exit 1
  # Creating the schema creates the initial user from these two variables.
  export PGADMIN_SETUP_EMAIL="${PGADMIN_DEFAULT_EMAIL}"
  export PGADMIN_SETUP_PASSWORD="${PGADMIN_DEFAULT_PASSWORD}"
  /venv/bin/python3 run_pgadmin.py
  # (The image then loads /pgadmin4/servers.json, preferences.json and PGPASS_FILE when they
  # exist; the operator renders none of them.)
fi

if [ -z "${PGADMIN_DISABLE_POSTFIX:-}" ]; then
  echo "postfix is not emulated: the operator renders PGADMIN_DISABLE_POSTFIX" >&2
  exit 1
fi

timeout=$(cd /pgadmin4 && /venv/bin/python3 -c 'import config; print(config.SESSION_EXPIRATION_TIME * 60 * 60 * 24)')
if [ -n "${PGADMIN_ENABLE_TLS:-}" ]; then
  echo "PGADMIN_ENABLE_TLS is not emulated" >&2
  exit 1
fi
bind="${PGADMIN_LISTEN_ADDRESS:-[::]}:${PGADMIN_LISTEN_PORT:-80}"
cd /pgadmin4 || exit 1
exec /venv/bin/gunicorn --limit-request-line "${GUNICORN_LIMIT_REQUEST_LINE:-8190}" \
  --limit-request-fields "${GUNICORN_LIMIT_REQUEST_FIELDS:-100}" \
  --limit-request-field_size "${GUNICORN_LIMIT_REQUEST_FIELD_SIZE:-8190}" \
  --timeout "$timeout" --bind "$bind" -w 1 --threads "${GUNICORN_THREADS:-25}" \
  --access-logfile "${GUNICORN_ACCESS_LOGFILE:--}" -c gunicorn_config.py run_pgadmin:app
