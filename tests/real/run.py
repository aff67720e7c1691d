"""The real-programs tier's checks, run by tests/integration/real_programs.rs inside a fresh
mount and network namespace (`unshare --mount --net`), as root.

The scenario file holds what the operator rendered on the simulated cluster (Pod templates,
Jobs, every Secret of the namespace) and what the simulated CloudNativePG generated (roles and
passwords). This script starts a real PostgreSQL 15 with those roles, TLS only, then runs each
rendered container with the real programs (tests/real/kubelet.py) and checks what a user would
see: pgAdmin starts, the initial user logs in, the registration Job registers exactly the
offered set, every server connects through pgAdmin and through libpq with no password typed,
the upgrade backup gives a dump pg_restore reads.
"""

import ast
import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubelet  # noqa: E402

PG = kubelet.PG_BIN
PGADMIN_PORT = 8080


class Failure(Exception):
    pass


def log(*args):
    print("[real]", *args, flush=True)


def check(condition, message):
    if not condition:
        raise Failure(message)


# ---------------------------------------------------------------------------------------------
# PostgreSQL, as the Clusters' instances: TLS required, the roles CloudNativePG would create.


class Postgres:
    def __init__(self, work, roles, databases, tls=None):
        self.data = os.path.join(work, "pgdata")
        self.sock = os.path.join(work, "pgsock")
        os.makedirs(self.sock)
        shutil.chown(self.sock, "postgres", "postgres")
        os.makedirs(self.data)
        shutil.chown(self.data, "postgres", "postgres")
        self.as_postgres([f"{PG}/initdb", "-D", self.data, "-A", "peer", "-U", "postgres"])
        self.tls = tls
        if tls:
            # The Cluster's server certificate, signed by its CA (as the instances serve it).
            self.serve(tls)
        else:
            self.as_postgres(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                              "-days", "1", "-subj", "/CN=postgres",
                              "-keyout", f"{self.data}/server.key",
                              "-out", f"{self.data}/server.crt"])
            os.chmod(f"{self.data}/server.key", 0o600)
        with open(f"{self.data}/postgresql.conf", "a") as f:
            f.write(f"listen_addresses = '127.0.0.1'\nport = 5432\nssl = on\n"
                    f"unix_socket_directories = '{self.sock}'\n")
        with open(f"{self.data}/pg_hba.conf", "w") as f:
            f.write("local all postgres peer\n"
                    "hostssl all all 127.0.0.1/32 scram-sha-256\n"
                    "host all all 0.0.0.0/0 reject\n")
        self.as_postgres([f"{PG}/pg_ctl", "-D", self.data, "-w", "-l", f"{self.sock}/postgres.log",
                          "start"])
        for role in roles:
            self.sql(f"CREATE ROLE {ident(role['name'])} LOGIN PASSWORD {literal(role['password'])}")
        for db in databases:
            self.sql(f"CREATE DATABASE {ident(db['name'])} OWNER {ident(db['owner'])}")

    def serve(self, tls):
        """Writes the certificate and key PostgreSQL serves (read at start and on reload)."""
        for name, text in (("server.crt", tls["cert"]), ("server.key", tls["key"])):
            path = f"{self.data}/{name}"
            with open(path, "w") as f:
                f.write(text)
            shutil.chown(path, "postgres", "postgres")
            os.chmod(path, 0o600)

    def reload(self):
        self.as_postgres([f"{PG}/pg_ctl", "-D", self.data, "reload"])
        time.sleep(1)

    def as_postgres(self, argv):
        out = subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                              *argv], capture_output=True, text=True)
        check(out.returncode == 0, f"{argv[0]}: {out.stdout}{out.stderr}")

    def sql(self, statement, db="postgres"):
        out = subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                              f"{PG}/psql", "-h", self.sock, "-d", db, "-XAtq", "-v",
                              "ON_ERROR_STOP=1", "-c", statement],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self):
        subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                        f"{PG}/pg_ctl", "-D", self.data, "-m", "immediate", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Directory:
    """OpenLDAP's slapd (Debian) on loopback with a configuration and database of its own:
    the bind account pgAdmin searches with and one person who signs in."""

    def __init__(self, work, spec):
        self.dir = os.path.join(work, "slapd")
        os.makedirs(os.path.join(self.dir, "db"))
        suffix = spec["suffix"]
        conf = os.path.join(self.dir, "slapd.conf")
        with open(conf, "w") as f:
            f.write("\n".join([
                "include /etc/ldap/schema/core.schema",
                "include /etc/ldap/schema/cosine.schema",
                "include /etc/ldap/schema/inetorgperson.schema",
                "modulepath /usr/lib/ldap",
                "moduleload back_mdb",
                f"pidfile {self.dir}/slapd.pid",
                "database mdb",
                "maxsize 10485760",
                f'suffix "{suffix}"',
                f'rootdn "{spec["bind_dn"]}"',
                f'rootpw {spec["bind_password"]}',
                f"directory {self.dir}/db",
                "",
            ]))
        people = spec["people"]
        dc = suffix.split(",")[0].split("=")[1]
        entries = [
            f"dn: {suffix}\nobjectClass: dcObject\nobjectClass: organization\no: {dc}\ndc: {dc}\n",
            f"dn: {people}\nobjectClass: organizationalUnit\nou: {people.split(',')[0].split('=')[1]}\n",
            f"dn: uid={spec['user']},{people}\nobjectClass: inetOrgPerson\nuid: {spec['user']}\n"
            f"cn: {spec['user']}\nsn: {spec['user']}\nmail: {spec['user']}@example.org\n"
            f"userPassword: {spec['password']}\n",
        ]
        ldif = os.path.join(self.dir, "data.ldif")
        with open(ldif, "w") as f:
            f.write("\n".join(entries))
        added = subprocess.run(["/usr/sbin/slapadd", "-f", conf, "-l", ldif],
                               capture_output=True, text=True)
        check(added.returncode == 0, f"slapadd: {added.stderr}")
        self.log = open(os.path.join(self.dir, "slapd.log"), "w")
        self.proc = subprocess.Popen(
            ["/usr/sbin/slapd", "-f", conf, "-h", f"ldap://127.0.0.1:{spec['port']}/", "-d", "0"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", spec["port"]), timeout=1).close()
                break
            except OSError:
                check(self.proc.poll() is None and time.time() < deadline,
                      f"slapd did not start: {tail(self.log.name)}")
                time.sleep(0.1)
        log(f"slapd serves {suffix} on port {spec['port']}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def issue(work, ca_cert, ca_key, host):
    """A server certificate for `host` signed by the CA (`cert`, `key` PEM texts)."""
    d = os.path.join(work, f"issued-{host}")
    os.makedirs(d)
    for name, text in (("ca.crt", ca_cert), ("ca.key", ca_key), ("ext", f"subjectAltName=DNS:{host}\n")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    run = lambda argv: subprocess.run(argv, check=True, capture_output=True, cwd=d)
    run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-subj", f"/CN={host}", "-keyout", "tls.key", "-out", "tls.csr"])
    run(["openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "1", "-extfile", "ext", "-out", "tls.crt"])
    with open(os.path.join(d, "tls.crt")) as c, open(os.path.join(d, "tls.key")) as k:
        return {"cert": c.read(), "key": k.read()}


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def literal(text):
    return "'" + text.replace("'", "''") + "'"


# ---------------------------------------------------------------------------------------------
# Pods: each container of a rendered Pod spec run by kubelet.py in its own mount namespace.


class Pod:
    def __init__(self, work, name, spec, secrets, layout):
        self.dir = os.path.join(work, "pods", name)
        self.spec, self.secrets, self.layout = spec, secrets, layout
        self.name = name
        os.makedirs(self.dir)
        kubelet.prepare_pod(self.dir, spec, secrets)
        self.count = 0

    def container(self, name):
        for c in self.spec.get("containers", []) + self.spec.get("initContainers", []):
            if c["name"] == name:
                return c
        raise Failure(f"{self.name}: no container {name}")

    def _spec_file(self, container):
        self.count += 1
        n = self.count
        layout = dict(self.layout)
        layout["pgadmin_upper"] = os.path.join(self.dir, f"upper-{n}")
        layout["pgadmin_work"] = os.path.join(self.dir, f"work-{n}")
        spec = {"pod": self.spec, "container": container, "secrets": self.secrets,
                "pod_dir": self.dir, "root": os.path.join(self.dir, f"root-{n}"),
                "layout": layout}
        path = os.path.join(self.dir, f"container-{n}.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        return path, layout["pgadmin_upper"]

    def _argv(self, container):
        path, upper = self._spec_file(container)
        return ["unshare", "--mount", "--", sys.executable, kubelet.__file__, path], upper

    def run(self, container, timeout=300):
        """Runs a container to completion: (exit code, output)."""
        argv, _ = self._argv(container)
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return out.returncode, out.stdout + out.stderr

    def start(self, container):
        """Starts a long-running container; returns the process, its log file and its
        writable /pgadmin4 layer (where config_distro.py lands)."""
        argv, upper = self._argv(container)
        log_path = os.path.join(self.dir, f"{container['name']}-{self.count}.log")
        logf = open(log_path, "w")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT)
        return proc, log_path, upper

    def run_init_containers(self):
        for c in self.spec.get("initContainers", []):
            code, out = self.run(c)
            check(code == 0, f"{self.name}: init container {c['name']} failed ({code}): {out}")


def with_command(container, command):
    c = dict(container)
    c["command"] = command
    c.pop("args", None)
    return c


# ---------------------------------------------------------------------------------------------
# pgAdmin over HTTP, as a browser and pgAdmin's own web client talk to it.


class Browser:
    def __init__(self, base, headers=None):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.headers = dict(headers or {})
        self.csrf = None

    def request(self, method, path, data=None, json_body=None, headers=None):
        h = dict(self.headers)
        h.update(headers or {})
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            h["Content-Type"] = "application/json"
        elif data is not None:
            body = urllib.parse.urlencode(data).encode()
            h["Content-Type"] = "application/x-www-form-urlencoded"
        if self.csrf:
            h["X-pgA-CSRFToken"] = self.csrf
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=h)
        try:
            with self.opener.open(req, timeout=60) as r:
                return r.status, r.geturl(), r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.geturl(), e.read().decode(errors="replace")

    def fetch_csrf(self, page):
        m = re.search(r'csrf_token"\s*(?:name="csrf_token"\s*)?type="hidden"\s*value="([^"]+)"', page) \
            or re.search(r'"csrfToken"\s*:\s*"([^"]+)"', page) \
            or re.search(r"csrf_token[^A-Za-z0-9]+([A-Za-z0-9._-]{40,})", page)
        check(m is not None, "no CSRF token on the page")
        return m.group(1)

    def login(self, email, password):
        status, _, page = self.request("GET", "/login")
        check(status == 200, f"GET /login answered {status}")
        token = self.fetch_csrf(page)
        status, url, page = self.request("POST", "/authenticate/login", data={
            "email": email, "password": password, "csrf_token": token, "language": "en",
            "internal_button": "Login"})
        check(status == 200 and "/login" not in url,
              f"login as {email} refused ({status}, ended at {url}): {page[:300]}")
        self.after_login()

    def after_login(self):
        status, url, page = self.request("GET", "/browser/")
        check(status == 200 and "/login" not in url, f"not logged in: {status} {url}")
        # pgAdmin's web client takes the token for its API calls from this script.
        status, _, script = self.request("GET", "/browser/js/utils.js")
        m = re.search(r"pgAdmin\['csrf_token'\] = '([^']+)'", script)
        check(status == 200 and m is not None, f"no CSRF token for the API ({status})")
        self.csrf = m.group(1)

    def servers(self):
        """(group id, server id, name) of every server the user sees."""
        status, _, page = self.request("GET", "/browser/server_group/nodes/")
        check(status == 200, f"server groups: {status} {page[:200]}")
        out = []
        answer = json.loads(page)
        for group in answer.get("result") or answer.get("data") or []:
            status, _, page = self.request("GET", f"/browser/server/nodes/{group['_id']}/")
            if status == 410 and "could not be found" in page:
                continue  # pgAdmin answers an empty group (its default "Servers") so
            check(status == 200, f"servers of group {group}: {status} {page[:300]}")
            nodes = json.loads(page).get("result")
            check(isinstance(nodes, list), f"servers of group {group['label']}: {page[:400]}")
            for server in nodes:
                out.append((group["_id"], server["_id"], server["label"]))
        return sorted(out, key=lambda s: s[2])

    def connect(self, gid, sid):
        status, _, page = self.request("POST", f"/browser/server/connect/{gid}/{sid}",
                                       json_body={})
        try:
            answer = json.loads(page)
        except ValueError:
            answer = {"raw": page[:300]}
        return status, answer


def wait_http(url, proc, log_path, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise Failure(f"pgAdmin exited ({proc.returncode}):\n{tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return r.read().decode()
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.5)
    raise Failure(f"{url} never answered 200:\n{tail(log_path)}")


def tail(path, n=40):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-n:])


def probe_url(container):
    """The readiness probe's URL on the Pod's address (loopback here)."""
    probe = container["readinessProbe"]["httpGet"]
    port = probe["port"]
    if isinstance(port, str):
        port = next(p["containerPort"] for p in container.get("ports", []) if p["name"] == port)
    return f"http://127.0.0.1:{port}{probe['path']}"


# ---------------------------------------------------------------------------------------------
# The checks.


def env_value(container, name):
    for item in container.get("env", []):
        if item["name"] == name:
            return item.get("value")
    return None


def shared_storage_path(container, pass_file):
    """Where pgAdmin resolves a `<storage>:/<file>` PassFile, from the rendered SHARED_STORAGE."""
    storages = ast.literal_eval(env_value(container, "PGADMIN_CONFIG_SHARED_STORAGE") or "[]")
    name, _, file = pass_file.partition(":/")
    path = next((s["path"] for s in storages if s["name"] == name), None)
    check(path is not None, f"PassFile {pass_file} names no shared storage")
    return os.path.join(path, file)


def dump_servers(pod, job_container, user):
    script = (f"set -e; " + job_script_config(job_container) +
              f"; /venv/bin/python3 /pgadmin4/setup.py dump-servers /tmp/d.json --user '{user}' >&2"
              f"; cat /tmp/d.json")
    code, out = pod.run(with_command(job_container, ["/bin/sh", "-c", script]))
    check(code == 0, f"dump-servers failed: {out}")
    return json.loads(out[out.index("{"):out.rindex("}") + 1])


def job_script_config(job_container):
    """The part of the registration Job's own script that builds config_distro.py."""
    script = job_container["command"][-1]
    start = script.index("cfg=")
    end = script.index("/venv/bin/python3")
    return script[start:end].rstrip("; ")


def libpq_connects(pod, container, server, passfile, rootcert=None):
    conninfo = (f"host={server['Host']} port={server['Port']} user={server['Username']} "
                f"dbname={server['MaintenanceDB']} sslmode={server['SSLMode']} passfile={passfile}")
    if rootcert:
        conninfo += f" sslrootcert={rootcert}"
    c = with_command(container, ["/usr/bin/psql", "-w", "-XAtq", conninfo, "-c",
                                 "select current_user"])
    c["env"] = [e for e in c.get("env", []) if "valueFrom" not in e]
    return pod.run(c)


def pgadmin_scenario(work, pg, case, secrets, layout):
    name = case["name"]
    log(f"== {name}")
    template = case["deployment"]["spec"]["template"]["spec"]
    job = case["registration_job"]["spec"]["template"]["spec"]
    job_container = job["containers"][0]
    pgadmin_container = next(c for c in template["containers"] if c["name"] == "pgadmin")
    servers_file = json.loads(secrets[case["servers_secret"]]["servers.json"])["Servers"]
    offered = sorted(servers_file.values(), key=lambda s: s["Name"])
    check(offered, f"{name}: the operator offered no server")
    email = env_value(pgadmin_container, "PGADMIN_DEFAULT_EMAIL")
    password = secrets[case["login_secret"]]["password"]

    # Before pgAdmin ever ran, there is nothing to register into: the Job must fail.
    early = Pod(work, f"{name}-early-register", job, secrets, layout)
    code, out = early.run(job_container)
    check(code != 0, f"{name}: a registration with no pgAdmin settings succeeded: {out}")
    log(f"{name}: the registration Job fails while pgAdmin never ran ({code})")

    # The pgAdmin Pod: init containers, then pgAdmin through the image's entrypoint.
    pod = Pod(work, f"{name}-pgadmin", template, secrets, layout)
    pod.run_init_containers()
    proc, log_path, upper = pod.start(pgadmin_container)
    try:
        if "readinessProbe" in pgadmin_container:
            url = probe_url(pgadmin_container)
        else:
            # Behind the OAuth2 proxy pgAdmin answers on loopback; the proxy probes itself.
            check(env_value(pgadmin_container, "PGADMIN_LISTEN_ADDRESS") == "127.0.0.1",
                  f"{name}: pgAdmin has no probe and does not listen on loopback")
            url = f"http://127.0.0.1:{PGADMIN_PORT}/misc/ping"
        wait_http(url, proc, log_path)
        log(f"{name}: pgAdmin is up, {url} answers 200")

        with open(os.path.join(upper, "config_distro.py")) as f:
            config_distro = f.read()
        for secret_name, key, value in secret_values(secrets):
            check(value not in config_distro,
                  f"{name}: config_distro.py holds {secret_name}/{key}")

        settings = case.get("settings")
        if settings:
            # spec.config.settings as pgAdmin's configuration loader reads them, in the
            # registration Job's container (its config_distro.py built as the entrypoint builds
            # it): each value exactly the data given, a hostile string included.
            probe = ("import json, sys; sys.path.insert(0, '/pgadmin4'); import config; "
                     "print('PGTOOLBOX-SETTINGS', "
                     f"json.dumps({{k: getattr(config, k) for k in {sorted(settings)!r}}}))")
            c = with_command(job_container, ["/bin/sh", "-c", job_script_config(job_container) +
                                             "; cd /pgadmin4 && /venv/bin/python3 -c \"$PROBE\""])
            c["env"] = c.get("env", []) + [{"name": "PROBE", "value": probe}]
            code, out = pod.run(c)
            check(code == 0, f"{name}: pgAdmin's configuration does not load: {out}")
            said = [l for l in out.splitlines() if l.startswith("PGTOOLBOX-SETTINGS ")]
            check(len(said) == 1, f"{name}: the settings probe said: {out}")
            loaded = json.loads(said[0].partition(" ")[2])
            check(loaded == settings, f"{name}: pgAdmin read {loaded!r}, not {settings!r}")
            ran = [d for d, _, files in os.walk(work) if "pwned" in files]
            check(not ran, f"{name}: a setting ran code: {ran}")
            for key, value in settings.items():
                check(f"{key} = " in config_distro, f"{name}: {key} not in config_distro.py")
            log(f"{name}: pgAdmin reads the {len(settings)} settings as data: {sorted(settings)}")

        # The registration Job's exact command, next to pgAdmin on its data volume.
        job_pod = Pod(work, f"{name}-register", job, secrets, layout)
        code, out = job_pod.run(job_container)
        check(code == 0, f"{name}: the registration Job failed ({code}):\n{out}")
        said = [line for line in out.splitlines() if "registered" in line]
        log(f"{name}: registration Job: {said[-1] if said else out.strip()}")

        dumped = sorted(dump_servers(job_pod, job_container, email)["Servers"].values(),
                        key=lambda s: s["Name"])
        check(len(dumped) == len(offered),
              f"{name}: {len(dumped)} servers registered, {len(offered)} offered")
        for want, got in zip(offered, dumped):
            params = got.get("ConnectionParameters", {})
            for key in ("Name", "Group", "Host", "Port", "MaintenanceDB", "Username",
                        "SharedUsername"):
                check(got.get(key) == want[key], f"{name}: {key} {got.get(key)!r} != {want[key]!r}")
            check(params.get("sslmode") == want["SSLMode"], f"{name}: SSLMode {params}")
            check(params.get("passfile") == want["PassFile"], f"{name}: PassFile {params}")
            check(params.get("sslrootcert") == want.get("SSLRootCert"),
                  f"{name}: SSLRootCert {params}")
            check(got.get("Shared") is True, f"{name}: {want['Name']} is not shared")
        log(f"{name}: dump-servers shows the {len(dumped)} offered servers")

        # libpq with the file pgAdmin resolves, in the pgAdmin container: no password typed.
        for server in offered:
            path = shared_storage_path(pgadmin_container, server["PassFile"])
            check(server["SSLMode"] == "verify-full" and "SSLRootCert" in server,
                  f"{name}: {server['Name']} is not verified against its CA: {server}")
            rootcert = shared_storage_path(pgadmin_container, server["SSLRootCert"])
            code, out = libpq_connects(pod, pgadmin_container, server, path, rootcert)
            check(code == 0 and out.strip() == server["Username"],
                  f"{name}: libpq with {path} as {server['Username']}: {out}")
        log(f"{name}: libpq connects to each server with its mounted credential file")

        # The Secret's own files, as the kubelet mounts them, are refused by libpq: the reason
        # the credential files are copied.
        init = next(c for c in template.get("initContainers", []) if c["name"] == "credentials")
        raw = offered[0]["PassFile"].partition(":/")[2]
        code, out = libpq_connects(pod, init, offered[0], f"/pgadmin-servers/{raw}")
        check(code != 0 and "group or world access" in out,
              f"{name}: libpq accepted the Secret volume's file as mounted: {out}")

        users = case_users(case, email, password, pod, job_container, pgadmin_container)
        for label, browser in users:
            seen = browser.servers()
            check(sorted(s[2] for s in seen) == [s["Name"] for s in offered],
                  f"{name}: {label} sees {[s[2] for s in seen]}")
            for gid, sid, server_name in seen:
                status, answer = browser.connect(gid, sid)
                connected = isinstance(answer.get("data"), dict) and answer["data"].get("connected")
                check(status == 200 and connected,
                      f"{name}: {label} could not connect to {server_name}: {status} {answer}")
            log(f"{name}: {label} connects to all {len(seen)} servers through pgAdmin")

        if case.get("wrong_host"):
            # The same CA, a certificate for another host name: verify-full refuses it, in
            # pgAdmin and in libpq; the Cluster's own certificate is served again afterwards.
            ca = secrets[case["ca_secret"]]
            pg.serve(issue(work, ca["ca.crt"], ca["ca.key"], case["wrong_host"]))
            pg.reload()
            try:
                label, browser = users[0]
                for gid, sid, server_name in browser.servers():
                    browser.request("DELETE", f"/browser/server/connect/{gid}/{sid}")
                    status, answer = browser.connect(gid, sid)
                    text = json.dumps(answer)
                    connected = isinstance(answer.get("data"), dict) and \
                        answer["data"].get("connected")
                    check(not connected and "does not match host name" in text,
                          f"{name}: {server_name} with a certificate for another host: "
                          f"{status} {text[:400]}")
                server = offered[0]
                path = shared_storage_path(pgadmin_container, server["PassFile"])
                rootcert = shared_storage_path(pgadmin_container, server["SSLRootCert"])
                code, out = libpq_connects(pod, pgadmin_container, server, path, rootcert)
                check(code != 0 and "does not match host name" in out,
                      f"{name}: libpq accepted a certificate for another host: {out}")
                log(f"{name}: a certificate of the same CA for another host name is refused "
                    f"({out.strip().splitlines()[-1]})")
            finally:
                pg.serve(pg.tls)
                pg.reload()

        if case.get("settings_database"):
            db = case["settings_database"]
            tables = pg.sql("select count(*) from information_schema.tables "
                            "where table_name in ('server', 'user', 'version')", db=db)
            check(tables == "3", f"{name}: pgAdmin's schema is not in {db}: {tables}")
            count = pg.sql("select count(*) from server", db=db)
            check(int(count) >= len(offered), f"{name}: {count} server rows in {db}")
            ssl = pg.sql("select bool_and(s.ssl) from pg_stat_ssl s join pg_stat_activity a "
                         f"using (pid) where a.datname = {literal(db)}")
            check(ssl in ("t", ""), f"{name}: a settings connection without TLS ({ssl})")
            check(not os.path.exists(os.path.join(work, "claims", case["claim"], "pgadmin4.db")),
                  f"{name}: pgAdmin wrote a SQLite settings file next to its settings database")
            log(f"{name}: pgAdmin's schema and the {count} servers are in {db}, over TLS")
        else:
            check(os.path.exists(os.path.join(work, "claims", case["claim"], "pgadmin4.db")),
                  f"{name}: no SQLite settings on the data volume")

        # No Secret value on the data volume.
        leaks = scan_for_secrets(os.path.join(work, "claims", case["claim"]), secrets,
                                 case.get("secret_values_allowed_on_volume", []))
        check(not leaks, f"{name}: Secret values in files on the data volume: {leaks}")

        for backup in case.get("upgrade_backups", []):
            upgrade_backup(work, name, backup, secrets, layout, case["claim"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def case_users(case, email, password, pod, job_container, pgadmin_container):
    base = f"http://127.0.0.1:{PGADMIN_PORT}"
    if case.get("ldap"):
        # A directory user signs in through pgAdmin's own form (created on first sign-in); the
        # same user with a wrong password is refused.
        ldap = case["ldap"]
        refused = Browser(base)
        status, _, page = refused.request("GET", "/login")
        status, url, page = refused.request("POST", "/authenticate/login", data={
            "csrf_token": refused.fetch_csrf(page), "email": ldap["user"],
            "password": ldap["password"] + "-wrong", "language": "en", "internal_button": "Login"})
        check("/login" in url, f"a wrong LDAP password signed in: {status} {url}")
        user = Browser(base)
        user.login(ldap["user"], ldap["password"])
        log(f"{case['name']}: the directory's {ldap['user']} signs in, a wrong password is refused")
        return [(f"the directory user {ldap['user']}", user)]
    if case.get("oauth2"):
        # Behind the proxy, pgAdmin takes whoever X-Forwarded-Email names (created on first
        # visit): two users the proxy let in.
        header = ast.literal_eval(env_value(pgadmin_container, "PGADMIN_CONFIG_WEBSERVER_REMOTE_USER"))
        out = []
        for user in ("alice@example.com", "bob@example.com"):
            b = Browser(base, headers={header: user})
            status, url, _ = b.request("GET", "/")
            check(status == 200 and "/login" not in url,
                  f"{user} through the proxy's header: {status} {url}")
            b.after_login()
            out.append((user, b))
        return out
    first = Browser(base)
    first.login(email, password)
    # A second user of the same pgAdmin, added as an administrator would add one.
    other, other_password = "bob@example.com", "a-second-user-9"
    code, out = pod.run(with_command(job_container, ["/bin/sh", "-c",
                        job_script_config(job_container) +
                        f"; /venv/bin/python3 /pgadmin4/setup.py add-user {other} {other_password} --role User"]))
    check(code == 0 and "error" not in out.lower(), f"add-user failed: {out}")
    second = Browser(base)
    second.login(other, other_password)
    return [("the initial user", first), ("a second user", second)]


def secret_values(secrets):
    """(Secret, key, value) of every password and secret key of the namespace's Secrets."""
    return [(name, k, v) for name, data in secrets.items() for k, v in data.items()
            if ("password" in k or "secret" in k) and len(v) >= 8]


def scan_for_secrets(root, secrets, allowed):
    values = {v for _, _, v in secret_values(secrets) if v not in allowed}
    found = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            try:
                with open(path, "rb") as fh:
                    content = fh.read()
            except OSError:
                continue
            for v in values:
                if v.encode() in content:
                    found.append(os.path.relpath(path, root))
    return sorted(set(found))


def upgrade_backup(work, name, backup, secrets, layout_base, claim):
    spec = backup["job"]["spec"]["template"]["spec"]
    container = spec["containers"][0]
    layout = dict(layout_base)
    layout["pgsql_dirs"] = backup.get("pgsql_dirs", [])
    layout["hide_usr_bin_pg_dump"] = backup.get("hide_usr_bin_pg_dump", False)
    pod = Pod(work, f"{name}-backup-{re.sub('[^a-z0-9]+', '-', backup['label'])}", spec,
              secrets, layout)
    code, out = pod.run(container)
    dump = os.path.join(work, "claims", claim, "backups", backup["file"])
    if backup.get("fails"):
        check(code != 0, f"{name}: backup with {backup['label']} succeeded: {out}")
        check(not os.path.exists(dump), f"{name}: a failed backup left {dump}")
        log(f"{name}: backup with {backup['label']} fails clearly: {out.strip()}")
        return
    check(code == 0, f"{name}: backup with {backup['label']} failed ({code}): {out}")
    listing = subprocess.run([f"{PG}/pg_restore", "--list", dump], capture_output=True, text=True)
    check(listing.returncode == 0 and " TABLE public server " in listing.stdout,
          f"{name}: pg_restore --list {dump}: {listing.stderr}")
    os.remove(dump)
    log(f"{name}: backup with {backup['label']} ({out.strip().splitlines()[-1]}) "
        f"is read by pg_restore")


def main():
    with open(sys.argv[1]) as f:
        scenario = json.load(f)
    work = scenario["work"]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    hosts = os.path.join(work, "hosts")
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n")
        for host in scenario["hosts"]:
            f.write(f"127.0.0.1 {host}\n")
    # The 9.10 image carries pg_dump and psql per PostgreSQL major in /usr/local/pgsql-<major>;
    # this machine has 15.
    layout = {"hosts": hosts, "pgsql_dirs": ["15"]}
    pg = Postgres(work, scenario["roles"], scenario["databases"], scenario.get("server_tls"))
    directory = Directory(work, scenario["ldap"]) if scenario.get("ldap") else None
    try:
        for case in scenario["cases"]:
            pgadmin_scenario(work, pg, case, scenario["secrets"], layout)
    except Failure as e:
        log(f"FAILED: {e}")
        return 1
    finally:
        pg.stop()
        if directory:
            directory.stop()
    log("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
