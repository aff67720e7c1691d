//! What the pgAdmin image does with what we render (pure), as read in its entrypoint and in
//! pgAdmin's sources, and tested against the real programs (`tests/real_programs.rs`):
//!
//! - The entrypoint writes every `PGADMIN_CONFIG_<NAME>` variable as the Python line
//!   `<NAME> = <value>` into `config_distro.py`, through an unquoted `echo`: a value must be a
//!   Python expression without blanks. It also pastes the settings database's URI into a
//!   `python3 -c` line to see whether the schema exists, so that value is evaluated as Python
//!   there too.
//! - Only the entrypoint does that: a container that runs `setup.py` itself (the registration
//!   Job) has an empty `config_distro.py` and must build it the same way.
//! - libpq ignores a password file that its group or others may read, and the kubelet gives a
//!   Secret volume's files the Pod's `fsGroup` group bits: the credential files are copied,
//!   0600 and owned by pgAdmin's user, into a memory volume when the Pod starts.
//! - In server mode pgAdmin resolves a server's `PassFile` (and `SSLRootCert`) under the connecting user's storage
//!   directory, or under a named shared storage (`<name>:/<file>`): the copies are a shared
//!   storage, so every pgAdmin user resolves the same file.

/// The image's interpreter and pgAdmin's command-line tool.
pub const PYTHON: &str = "/venv/bin/python3";
pub const SETUP_PY: &str = "/pgadmin4/setup.py";
/// Where the credential files are copied, and the shared storage naming that directory.
pub const CREDENTIALS_MOUNT: &str = "/pgtoolbox-credentials";
pub const CREDENTIALS_STORAGE: &str = "pgtoolbox-credentials";
/// The variable the settings database's password reaches pgAdmin through. It has no
/// `PGADMIN_CONFIG_` prefix, so the entrypoint never writes it into `config_distro.py`, and it
/// is not a libpq variable, so no connection to a registered server ever sends it.
pub const CONFIG_DB_PASSWORD_ENV: &str = "PGTOOLBOX_CONFIG_DB_PASSWORD";

/// A Python string literal (single-quoted) of text without blanks, quotes or backslashes.
fn py_str(text: &str) -> String {
    format!("'{text}'")
}

/// Percent-encodes everything but unreserved URI characters, so a role or database name can
/// neither break the URI nor the Python literal around it.
fn uri_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `CONFIG_DATABASE_URI` as a Python expression: the password is read from
/// [`CONFIG_DB_PASSWORD_ENV`] when the configuration is imported, percent-encoded, so it is in
/// no file. `postgresql+psycopg` names the driver the image ships (psycopg 3); the plain
/// `postgresql` scheme selects psycopg2 in the entrypoint's own check.
pub fn config_database_uri(role: &str, host: &str, port: i32, database: &str) -> String {
    let password = format!(
        "__import__('urllib.parse').parse.quote({},safe='')",
        env_value(CONFIG_DB_PASSWORD_ENV)
    );
    format!(
        "{}+{password}+{}",
        py_str(&format!("postgresql+psycopg://{}:", uri_component(role))),
        py_str(&format!(
            "@{}:{port}/{}?sslmode=require",
            uri_component(host),
            uri_component(database)
        )),
    )
}

/// A Python expression reading the variable `name` when pgAdmin imports its configuration, so
/// a secret passed through it (from a Secret reference) is in no file, `config_distro.py`
/// included. `name` is one of our constants (letters and `_`).
pub fn env_value(name: &str) -> String {
    format!("__import__('os').environ.get({})", py_str(name))
}

/// `SHARED_STORAGE`: the credential copies, read-only to users who are not administrators.
pub fn shared_storage() -> String {
    format!(
        "[{{'name':{},'path':{},'restricted_access':True}}]",
        py_str(CREDENTIALS_STORAGE),
        py_str(CREDENTIALS_MOUNT)
    )
}

/// The `PassFile` a server names: the copy of its credential file, through the shared storage.
pub fn pass_file(file: &str) -> String {
    format!("{CREDENTIALS_STORAGE}:/{file}")
}

/// The init container's script: copies each credential file and server CA file of the servers
/// Secret (mounted at `from`), readable by pgAdmin's user alone, into the memory volume.
pub fn copy_credentials_script(from: &str) -> String {
    format!(
        "set -eu; umask 077; for f in {from}/*.pgpass {from}/*.ca.crt; do [ -e \"$f\" ] || continue; \
         cat \"$f\" > \"{CREDENTIALS_MOUNT}/${{f##*/}}\"; done"
    )
}

/// Builds `config_distro.py` from the `PGADMIN_CONFIG_*` variables exactly as the image's
/// entrypoint does (the same unquoted `echo`), for a container that runs `setup.py` itself.
const WRITE_CONFIG: &str = "cfg=\"${CONFIG_DISTRO_FILE_PATH:-/pgadmin4/config_distro.py}\"; : > \"$cfg\"; \
for var in $(env | grep '^PGADMIN_CONFIG_' | cut -d= -f1); do \
echo ${var#PGADMIN_CONFIG_} = $(eval \"echo \\$$var\") >> \"$cfg\"; done";

/// Fails unless every server of the servers file is registered for the user: `load-servers`
/// prints its errors and exits 0 (a missing settings database, an unknown user).
const VERIFY: &str = r#"import json, sys
keys = ('Name', 'Group', 'Host', 'Port', 'MaintenanceDB', 'Username', 'Shared', 'SharedUsername')
def row(s):
    params = s.get('ConnectionParameters') or {}
    return json.dumps([s.get(k) for k in keys] + [
        s.get('SSLMode', params.get('sslmode')), s.get('PassFile', params.get('passfile')),
        s.get('SSLRootCert', params.get('sslrootcert'))])
def servers(path):
    try:
        with open(path) as f:
            return sorted(row(s) for s in json.load(f).get('Servers', {}).values())
    except (OSError, ValueError, AttributeError):
        return []
want, got = servers(sys.argv[1]), servers(sys.argv[2])
if want != got:
    sys.exit('registered %d servers, %d offered: the registered set is not the offered one' % (len(got), len(want)))
print('registered the %d offered servers' % len(got))
"#;

/// The registration Job's script: the configuration the entrypoint would build, pgAdmin's own
/// `load-servers --replace` for `user`, then `dump-servers` to check what was registered.
pub fn registration_script(servers_file: &str, user: &str) -> String {
    let dumped = "/tmp/registered.json";
    format!(
        "set -eu; {WRITE_CONFIG}; \
         {PYTHON} {SETUP_PY} load-servers '{servers_file}' --user '{user}' --replace; \
         {PYTHON} {SETUP_PY} dump-servers {dumped} --user '{user}'; \
         {PYTHON} -c \"$VERIFY_REGISTRATION\" '{servers_file}' {dumped}"
    )
}

/// The variable holding [`VERIFY`] for [`registration_script`].
pub fn verify_env() -> (&'static str, &'static str) {
    ("VERIFY_REGISTRATION", VERIFY)
}

/// The upgrade backup: the newest `pg_dump` the image carries (`/usr/local/pgsql-<major>/` up
/// to 9.10, `/usr/bin` in later images), written beside and then renamed, so a failed dump
/// never leaves a file that looks like a backup.
pub fn backup_script(dir: &str, file: &str, host: &str, port: i32, role: &str, db: &str) -> String {
    format!(
        "set -eu; dump=''; \
         for d in /usr/local/pgsql-*; do [ -x \"$d/pg_dump\" ] && dump=\"$d/pg_dump\"; done; \
         if [ -z \"$dump\" ] && [ -x /usr/bin/pg_dump ]; then dump=/usr/bin/pg_dump; fi; \
         if [ -z \"$dump\" ]; then echo 'no pg_dump in this image (looked in /usr/local/pgsql-*/ and /usr/bin)' >&2; exit 2; fi; \
         mkdir -p '{dir}'; \
         \"$dump\" -Fc -h '{host}' -p {port} -U '{role}' -d '{db}' -f '{dir}/{file}.partial'; \
         mv '{dir}/{file}.partial' '{dir}/{file}'; echo \"backed up with $dump\""
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uri_is_a_python_expression_without_blanks_or_the_password() {
        let uri = config_database_uri("pgadmin", "settings-rw.team-a.svc", 5432, "pg admin");
        assert!(!uri.contains(' '), "{uri}");
        assert!(uri.starts_with("'postgresql+psycopg://pgadmin:'+"), "{uri}");
        assert!(uri.ends_with("+'@settings-rw.team-a.svc:5432/pg%20admin?sslmode=require'"));
        assert!(uri.contains(CONFIG_DB_PASSWORD_ENV));
    }

    #[test]
    fn names_are_percent_encoded() {
        assert_eq!(uri_component("a'b\\c d"), "a%27b%5Cc%20d");
        assert_eq!(uri_component("ok-_.~9"), "ok-_.~9");
    }

    #[test]
    fn shared_storage_and_pass_files_agree() {
        assert!(shared_storage().contains("'name':'pgtoolbox-credentials'"));
        assert!(!shared_storage().contains(' '));
        assert_eq!(
            pass_file("server-1.pgpass"),
            "pgtoolbox-credentials:/server-1.pgpass"
        );
    }
}
