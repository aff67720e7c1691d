#!/usr/bin/env python3
"""The real store of the evidence agent's tier (tests/integration/evidence_real.rs).

`up WORK`: a CA and a server certificate for 127.0.0.1 (openssl), moto's S3 server serving
TLS with them, the bucket, and PostgreSQL 15 (Debian) archiving its WAL into it with
barman-cloud-wal-archive and taking base backups with barman-cloud-backup, as the barman-cloud
plugin of CloudNativePG runs them. Prints a JSON description of what runs (ports, pids, paths).
`down WORK`: stops what `up` started.
`put WORK KEY`: writes KEY with the agents' read-only credentials; prints the store's answer
(the tier expects AccessDenied: those credentials cannot write).

moto enforces IAM (after the two users are made, `/moto-api/reset-auth 0`): barman works with
an administrator's keys, the agents get a user whose only policy allows s3:GetObject and
s3:ListBucket on the bucket, and a wrong secret key is refused as AWS refuses it.

One more backup of the Cluster fails for real: a file in PGDATA the postgres user cannot
read makes barman-cloud-backup's upload fail after it began, and barman records the backup
with status FAILED and its error.

Everything runs as the `postgres` user the Debian package creates; nothing is left outside WORK.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../target/real-programs/barman-venv")
VENV = os.path.normpath(VENV)
PGBIN = "/usr/lib/postgresql/15/bin"
BUCKET = "pgtoolbox-backups"
PREFIX = "team-a"
# The server names: the Cluster's (its plugin's serverName) and another Cluster's in the
# same bucket.
SERVER = "orders"
OTHER = "billing"
REGION = "eu-west-3"
# The policy of the agents' user: read only, on the bucket. AWS authorises ListObjectsV2 as
# s3:ListBucket; moto 5.2 checks the operation's own name, s3:ListObjectsV2, so both are
# granted (neither writes).
READ_ONLY_POLICY = {
    "Version": "2012-10-17",
    "Statement": [{
        "Effect": "Allow",
        "Action": ["s3:GetObject", "s3:ListBucket", "s3:ListObjectsV2"],
        "Resource": ["arn:aws:s3:::%s" % BUCKET, "arn:aws:s3:::%s/*" % BUCKET],
    }],
}
ADMIN_POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, env=None, user=None, check=True, capture=True):
    if user:
        cmd = ["runuser", "-u", user, "--"] + cmd
    r = subprocess.run(cmd, env=env, capture_output=capture, text=True)
    if check and r.returncode != 0:
        sys.stderr.write("failed: %s\n%s\n%s\n" % (" ".join(cmd), r.stdout, r.stderr))
        sys.exit(1)
    return r


def openssl(work):
    ca_key, ca, key, csr, crt = (os.path.join(work, n) for n in ("ca.key", "ca.crt", "s3.key", "s3.csr", "s3.crt"))
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
         "-subj", "/CN=evidence test store CA", "-days", "2"])
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"])
    ext = os.path.join(work, "s3.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
    run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
         "-days", "2", "-extfile", ext])
    os.chmod(key, 0o644)
    return ca, crt, key


def wait_port(port, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit("%s never listened on %d" % (what, port))


def iam_users(endpoint, ca):
    """An administrator and a read-only user with their access keys, then IAM enforced."""
    import boto3
    import urllib.request
    import ssl
    os.environ["AWS_CA_BUNDLE"] = ca
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
    keys = {}
    for user, policy in (("barman", ADMIN_POLICY), ("evidence-reader", READ_ONLY_POLICY)):
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName=user, PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        keys[user] = (key["AccessKeyId"], key["SecretAccessKey"])
    request = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                     headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request, context=ssl.create_default_context(cafile=ca)).read()
    return keys


def barman_env(ca, endpoint, keys):
    env = dict(os.environ)
    env.update({
        "AWS_ACCESS_KEY_ID": keys[0],
        "AWS_SECRET_ACCESS_KEY": keys[1],
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CA_BUNDLE": ca,
        "PATH": "%s/bin:%s:%s" % (VENV, PGBIN, env.get("PATH", "/usr/bin:/bin")),
    })
    return env


def psql(work, port, sql):
    return run(["%s/psql" % PGBIN, "-X", "-At", "-h", work, "-p", str(port), "-U", "postgres", "-d", "postgres",
                "-c", sql], user="postgres").stdout.strip()


def up(work):
    os.makedirs(work, exist_ok=True)
    os.chmod(work, 0o777)
    ca, crt, key = openssl(work)
    s3_port = free_port()
    endpoint = "https://127.0.0.1:%d" % s3_port
    moto_log = open(os.path.join(work, "moto.log"), "w")
    moto = subprocess.Popen(["%s/bin/moto_server" % VENV, "-H", "127.0.0.1", "-p", str(s3_port), "-c", crt, "-k", key],
                            stdout=moto_log, stderr=subprocess.STDOUT, start_new_session=True)
    wait_port(s3_port, "moto")
    users = iam_users(endpoint, ca)
    env = barman_env(ca, endpoint, users["barman"])
    run(["%s/bin/python3" % VENV, "-c",
         "import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1]).create_bucket(Bucket=sys.argv[2], "
         "CreateBucketConfiguration={'LocationConstraint': sys.argv[3]})", endpoint, BUCKET, REGION], env=env)
    dest = "s3://%s/%s" % (BUCKET, PREFIX)
    pgdata = os.path.join(work, "pgdata")
    run(["%s/initdb" % PGBIN, "-D", pgdata, "-U", "postgres", "--auth=trust"], user="postgres")
    pg_port = free_port()
    archive = ("barman-cloud-wal-archive --endpoint-url %s %s %s %%p" % (endpoint, dest, SERVER))
    with open(os.path.join(pgdata, "postgresql.conf"), "a") as f:
        f.write("listen_addresses = ''\nport = %d\nunix_socket_directories = '%s'\n" % (pg_port, work))
        f.write("archive_mode = on\narchive_command = '%s'\nwal_level = replica\n" % archive)
    run(["%s/pg_ctl" % PGBIN, "-D", pgdata, "-l", os.path.join(work, "pg.log"), "-w", "start"], env=env, user="postgres")
    psql(work, pg_port, "CREATE TABLE t AS SELECT generate_series(1, 1000) AS n")
    for _ in range(3):
        psql(work, pg_port, "SELECT pg_switch_wal()")
        psql(work, pg_port, "INSERT INTO t SELECT generate_series(1, 100)")
    backup = ["barman-cloud-backup", "--immediate-checkpoint", "--endpoint-url", endpoint, "-h", work,
              "-p", str(pg_port), "-U", "postgres"]
    run(backup + ["-n", "nightly-1", dest, SERVER], env=env, user="postgres")
    psql(work, pg_port, "INSERT INTO t SELECT generate_series(1, 100)")
    psql(work, pg_port, "SELECT pg_switch_wal()")
    run(backup + ["-n", "nightly-2", dest, SERVER], env=env, user="postgres")
    # A backup that fails after it began: barman cannot read a file of PGDATA (the server
    # ignores files it does not know). Backup ids are times to the second.
    time.sleep(1.1)
    unreadable = os.path.join(pgdata, "unreadable-by-postgres")
    with open(unreadable, "w") as f:
        f.write("root only\n")
    os.chmod(unreadable, 0o600)
    failed = run(backup + ["-n", "broken-1", dest, SERVER], env=env, user="postgres", check=False)
    os.remove(unreadable)
    if failed.returncode == 0:
        sys.exit("the backup with an unreadable file did not fail")
    time.sleep(1.1)
    # Another Cluster's backup and WAL in the same bucket, under its own server name.
    run(backup + ["-n", "billing-1", dest, OTHER], env=env, user="postgres")
    psql(work, pg_port, "INSERT INTO t SELECT generate_series(1, 100)")
    last = psql(work, pg_port, "SELECT pg_walfile_name(pg_switch_wal())")
    deadline = time.time() + 60
    while psql(work, pg_port, "SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver") < last:
        if time.time() > deadline:
            sys.exit("WAL %s never archived" % last)
        time.sleep(0.2)
    run(["%s/pg_ctl" % PGBIN, "-D", pgdata, "-m", "fast", "-w", "stop"], user="postgres")
    print(json.dumps({
        "endpoint": endpoint, "ca": ca, "bucket": BUCKET, "prefix": PREFIX, "destination": dest,
        "server": SERVER, "other": OTHER, "access_key": users["barman"][0],
        "secret_key": users["barman"][1], "reader_access_key": users["evidence-reader"][0],
        "reader_secret_key": users["evidence-reader"][1], "region": REGION, "moto_pid": moto.pid, "venv": VENV, "last_wal": last,
    }))


def down(work):
    with open(os.path.join(work, "store.json")) as f:
        desc = json.load(f)
    try:
        os.killpg(desc["moto_pid"], signal.SIGTERM)
    except ProcessLookupError:
        pass


def s3_client(desc, who="barman"):
    os.environ["AWS_CA_BUNDLE"] = desc["ca"]
    import boto3  # noqa: E402 (the venv's interpreter runs this command)
    prefix = "" if who == "barman" else "reader_"
    return boto3.client("s3", endpoint_url=desc["endpoint"], aws_access_key_id=desc[prefix + "access_key"],
                        aws_secret_access_key=desc[prefix + "secret_key"], region_name=REGION)


def objects(work):
    """Every object of the bucket with its ETag and modification time, as JSON."""
    with open(os.path.join(work, "store.json")) as f:
        desc = json.load(f)
    client = s3_client(desc)
    out = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for o in page.get("Contents", []):
            out.append([o["Key"], o["ETag"], o["LastModified"].isoformat(), o["Size"]])
    print(json.dumps(out))


def delete(work, key):
    with open(os.path.join(work, "store.json")) as f:
        desc = json.load(f)
    s3_client(desc).delete_object(Bucket=BUCKET, Key=key)


def put(work, key):
    """Writes with the agents' credentials (a put, then a delete of KEY): prints the store's
    answer to each, its error code or "done"."""
    with open(os.path.join(work, "store.json")) as f:
        desc = json.load(f)
    import botocore.exceptions
    client = s3_client(desc, "reader")
    answers = []
    for write in (lambda: client.put_object(Bucket=BUCKET, Key=key, Body=b"written by the reader"),
                  lambda: client.delete_object(Bucket=BUCKET, Key=key)):
        try:
            write()
            answers.append("done")
        except botocore.exceptions.ClientError as e:
            answers.append(e.response["Error"]["Code"])
    print(" ".join(answers))


if __name__ == "__main__":
    command = sys.argv[1]
    # boto3 is needed: the store's venv runs every command.
    python = os.path.join(VENV, "bin", "python3")
    if os.path.realpath(sys.prefix) != os.path.realpath(VENV):
        os.execv(python, [python] + sys.argv)
    {"up": up, "down": down, "objects": objects, "delete": delete, "put": put}[command](*sys.argv[2:])
