#!/usr/bin/env python3
"""The evidence agent at scale (issue 47, item 4): a synthetic barman-cloud layout of 10,000
base backups and 1,000,000 WAL segments, read by `pgtoolbox-evidence-agent` and by
`barman-cloud-backup-list --format json`, timed, with the peak resident memory of each, in one
run. Prints a Markdown table (BENCHMARKS.md holds one). Not part of CI: it takes minutes.

    cargo build --release -p pgtoolbox-evidence-agent
    bash tests/real/setup.sh        # barman-cloud in target/real-programs/barman-venv
    python3 tests/real/evidence_scale.py [--scales 0.1,1] [--backups N] [--agent target/release/pgtoolbox-evidence-agent]

The store: moto's S3 server lists a bucket by walking and sorting every key of it on each
page request, so a listing of a million keys would take hours; this script serves the
layout itself instead, a small S3 endpoint (plain HTTP, no signature check) with exactly the
requests both readers send: ListObjectsV2 (prefix, delimiter, max-keys, continuation token,
start-after), GetObject, HeadObject, HeadBucket and GetBucketLocation. The keys are one sorted
list (each page is a binary search and a slice); each `backup.info` is the real tier's file
(evidence-agent/testdata/done.backup.info) with this backup's times, WAL and name.
"""

import argparse
import bisect
import datetime
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from xml.sax.saxutils import escape

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
VENV = os.path.join(ROOT, "target/real-programs/barman-venv")
BUCKET = "pgtoolbox-backups"
PREFIX = "scale"
SERVER = "orders"
TEMPLATE = os.path.join(ROOT, "evidence-agent/testdata/done.backup.info")
MODIFIED = "2026-12-07T12:00:00.000Z"
PER_LOG = 256  # 16 MiB segments


def segment(n):
    return "00000001%08X%08X" % (n // PER_LOG, n % PER_LOG)


class Layout:
    """`backups` base backups and `segments` WAL segments of timeline 1 (every 100,000th
    missing from the run, so the archive has gaps), each backup with its `.backup` label."""

    def __init__(self, backups, segments):
        with open(TEMPLATE) as f:
            self.template = f.read()
        root = "%s/%s" % (PREFIX, SERVER)
        start = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
        gaps = max(1, segments // 100_000)
        total = segments + gaps
        skipped = {(i + 1) * (total // (gaps + 1)) for i in range(gaps)}
        self.infos = {}
        keys = []
        for i in range(backups):
            begin = start + datetime.timedelta(hours=i)
            bid = begin.strftime("%Y%m%dT%H%M%S")
            wal = (i * total) // max(backups, 1)
            self.infos["%s/base/%s/backup.info" % (root, bid)] = (i, begin, wal)
            keys.append("%s/base/%s/backup.info" % (root, bid))
            keys.append("%s/base/%s/data.tar" % (root, bid))
            keys.append("%s/wals/%s/%s.00000028.backup" % (root, segment(wal)[:16], segment(wal)))
        for n in range(total):
            if n in skipped:
                continue
            name = segment(n)
            keys.append("%s/wals/%s/%s" % (root, name[:16], name))
        keys.sort()
        self.keys = keys
        self.segments = total - len(skipped)

    def backup_info(self, key):
        i, begin, wal = self.infos[key]
        end = begin + datetime.timedelta(minutes=5)
        out = []
        for line in self.template.splitlines():
            name = line.split("=", 1)[0]
            value = {
                "backup_name": "nightly-%d" % i,
                "begin_time": str(begin),
                "end_time": str(end),
                "begin_wal": segment(wal),
                "end_wal": segment(wal),
                "status": "FAILED" if i % 1000 == 999 else "DONE",
            }.get(name)
            out.append(line if value is None else "%s=%s" % (name, value))
        return ("\n".join(out) + "\n").encode()

    def page(self, prefix, delimiter, start_after, max_keys):
        """ListObjectsV2: (contents, common prefixes, next token or None)."""
        if start_after and delimiter and start_after.endswith(delimiter):
            # After a common prefix: past every key under it.
            i = bisect.bisect_left(self.keys, start_after[:-1] + chr(ord(delimiter[-1]) + 1))
        elif start_after:
            i = bisect.bisect_right(self.keys, start_after)
        else:
            i = bisect.bisect_left(self.keys, prefix)
        contents, prefixes = [], []
        last = None
        while i < len(self.keys) and len(contents) + len(prefixes) < max_keys:
            key = self.keys[i]
            if not key.startswith(prefix):
                break
            rest = key[len(prefix):]
            if delimiter and delimiter in rest:
                common = prefix + rest[: rest.index(delimiter) + len(delimiter)]
                prefixes.append(common)
                last = common
                # Past every key under this common prefix.
                i = bisect.bisect_left(self.keys, common[:-1] + chr(ord(delimiter[-1]) + 1))
                continue
            contents.append(key)
            last = key
            i += 1
        more = i < len(self.keys) and self.keys[i].startswith(prefix)
        return contents, prefixes, (last if more else None)


def handler_for(layout):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # One response is two writes (head, body): without this, delayed ACKs stall each.
        disable_nagle_algorithm = True

        def log_message(self, fmt, *args):
            if os.environ.get("SCALE_DEBUG"):
                sys.stderr.write("%.3f %s\n" % (time.monotonic(), fmt % args))

        def send(self, code, body=b"", kind="application/xml", head=False, extra=None):
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def target(self):
            url = urllib.parse.urlsplit(self.path)
            parts = url.path.lstrip("/").split("/", 1)
            key = urllib.parse.unquote(parts[1]) if len(parts) > 1 else ""
            return parts[0], key, urllib.parse.parse_qs(url.query, keep_blank_values=True)

        def object(self, head):
            bucket, key, _ = self.target()
            if bucket != BUCKET:
                return self.send(404, b"<Error><Code>NoSuchBucket</Code></Error>", head=head)
            if key in layout.infos:
                body = layout.backup_info(key)
            else:
                j = bisect.bisect_left(layout.keys, key)
                if j == len(layout.keys) or layout.keys[j] != key:
                    return self.send(404, b"<Error><Code>NoSuchKey</Code><Message>The specified key "
                                          b"does not exist.</Message></Error>", head=head)
                body = b""
            extra = {"ETag": '"%032x"' % (hash(key) & (2**128 - 1)),
                     "Last-Modified": "Mon, 07 Dec 2026 12:00:00 GMT"}
            self.send(200, body, kind="binary/octet-stream", head=head, extra=extra)

        def do_HEAD(self):
            bucket, key, _ = self.target()
            if not key:
                return self.send(200 if bucket == BUCKET else 404, head=True)
            self.object(head=True)

        def do_GET(self):
            bucket, key, query = self.target()
            if key:
                return self.object(head=False)
            if bucket != BUCKET:
                return self.send(404, b"<Error><Code>NoSuchBucket</Code></Error>")
            if "location" in query:
                return self.send(200, b'<?xml version="1.0" encoding="UTF-8"?><LocationConstraint '
                                      b'xmlns="http://s3.amazonaws.com/doc/2006-03-01/">eu-west-3'
                                      b'</LocationConstraint>')
            q = lambda name, default="": query.get(name, [default])[0]  # noqa: E731
            prefix, delimiter = q("prefix"), q("delimiter")
            token = q("continuation-token")
            max_keys = min(int(q("max-keys", "1000")), 1000)
            contents, prefixes, next_token = layout.page(prefix, delimiter, token or q("start-after"), max_keys)
            out = ['<?xml version="1.0" encoding="UTF-8"?>'
                   '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                   "<Name>%s</Name><Prefix>%s</Prefix><MaxKeys>%d</MaxKeys><KeyCount>%d</KeyCount>"
                   % (BUCKET, escape(prefix), max_keys, len(contents) + len(prefixes))]
            if delimiter:
                out.append("<Delimiter>%s</Delimiter>" % escape(delimiter))
            if token:
                out.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
            out.append("<IsTruncated>%s</IsTruncated>" % ("true" if next_token else "false"))
            if next_token:
                out.append("<NextContinuationToken>%s</NextContinuationToken>" % escape(next_token))
            for key in contents:
                size = len(layout.backup_info(key)) if key in layout.infos else 0
                out.append("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>&quot;%032x&quot;"
                           "</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>"
                           % (escape(key), MODIFIED, hash(key) & (2**128 - 1), size))
            for p in prefixes:
                out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % escape(p))
            out.append("</ListBucketResult>")
            self.send(200, "".join(out).encode())

    return Handler


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measure_agent(agent, endpoint, work):
    tls = os.path.join(work, "tls")
    os.makedirs(tls, exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    os.path.join(tls, "tls.key"), "-out", os.path.join(tls, "tls.crt"), "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-days", "1"],
                   check=True, capture_output=True)
    shutil.copy(os.path.join(tls, "tls.crt"), os.path.join(tls, "ca.crt"))
    port = free_port()
    env = {
        "EVIDENCE_DESTINATION_PATH": "s3://%s/%s" % (BUCKET, PREFIX),
        "EVIDENCE_SERVER_NAME": SERVER,
        "EVIDENCE_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "AKIASCALE",
        "AWS_SECRET_ACCESS_KEY": "scale",
        "AWS_REGION": "eu-west-3",
        "EVIDENCE_TLS_DIR": tls,
        "EVIDENCE_CA_FILE": os.path.join(tls, "ca.crt"),
        "EVIDENCE_LISTEN": "127.0.0.1:%d" % port,
        "EVIDENCE_REFRESH_SECONDS": "3600",
        "RUST_LOG": "warn",
    }
    context = ssl.create_default_context(cafile=os.path.join(tls, "ca.crt"))
    get = lambda path: urllib.request.urlopen("https://localhost:%d%s" % (port, path),  # noqa: E731
                                              context=context, timeout=600)
    started = time.monotonic()
    proc = subprocess.Popen([agent], env=env, stdout=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                sys.exit("the agent exited")
            try:
                if get("/readyz").status == 200:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        wall = time.monotonic() - started
        rss_read = peak_rss_kib(proc.pid)
        evidence = json.load(get("/v1/evidence"))
        rss_served = peak_rss_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    return {
        "seconds": evidence["read"]["durationSeconds"], "wall": wall, "objects": evidence["read"]["objects"],
        "rss_read": rss_read, "rss_served": rss_served, "backups": len(evidence["backups"]),
        "segments": sum(t["segments"] for t in evidence["wal"]),
        "gaps": sum(len(t["gaps"]) for t in evidence["wal"]),
    }


def measure_barman(endpoint):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIASCALE", AWS_SECRET_ACCESS_KEY="scale",
               AWS_DEFAULT_REGION="eu-west-3")
    started = time.monotonic()
    proc = subprocess.Popen([os.path.join(VENV, "bin/barman-cloud-backup-list"), "--endpoint-url", endpoint,
                             "--format", "json", "s3://%s/%s" % (BUCKET, PREFIX), SERVER],
                            env=env, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit("barman-cloud-backup-list failed")
    return {"seconds": time.monotonic() - started, "rss": usage.ru_maxrss,
            "backups": len(json.loads(out)["backups_list"])}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scales", default="1", help="fractions of 10,000 backups / 1,000,000 segments")
    parser.add_argument("--backups", type=int, help="base backups in every run (default: the scale's share of 10,000)")
    parser.add_argument("--agent", default=os.path.join(ROOT, "target/release/pgtoolbox-evidence-agent"))
    args = parser.parse_args()
    rows = []
    for scale in (float(s) for s in args.scales.split(",")):
        backups = args.backups if args.backups is not None else int(10_000 * scale)
        layout = Layout(backups, int(1_000_000 * scale))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler_for(layout))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        endpoint = "http://127.0.0.1:%d" % server.server_address[1]
        with tempfile.TemporaryDirectory() as work:
            agent = measure_agent(args.agent, endpoint, work)
        barman = measure_barman(endpoint)
        server.shutdown()
        assert agent["backups"] == barman["backups"] == len(layout.infos), (agent, barman)
        assert agent["segments"] == layout.segments, (agent, layout.segments)
        per = len(layout.keys) / 100_000
        rows.append((len(layout.infos), layout.segments, len(layout.keys), agent, barman, per))
        sys.stderr.write("scale %s done: %s %s\n" % (scale, agent, barman))
    print("| base backups | WAL segments | objects | agent: read (s) | agent: s per 100k objects "
          "| agent: peak RSS after the read (MiB) | agent: peak RSS after serving the JSON (MiB) "
          "| barman-cloud-backup-list (s) | its peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backups, segments, objects, agent, barman, per in rows:
        print("| %d | %d | %d | %.1f | %.2f | %.0f | %.0f | %.1f | %.0f |" % (
            backups, segments, objects, agent["seconds"], agent["seconds"] / per, agent["rss_read"] / 1024,
            agent["rss_served"] / 1024, barman["seconds"], barman["rss"] / 1024))


if __name__ == "__main__":
    main()
