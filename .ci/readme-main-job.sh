#!/usr/bin/env bash
# Runs the README's main-job command exactly as written (.ci/readme-commands.sh main) and
# checks what a newcomer would see: it serves, every example object turns Ready, Ctrl-C
# (SIGINT) stops it with exit code 0, and nothing on stderr says ERROR.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd="$(bash .ci/readme-commands.sh main)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "README main job: $cmd"
# `cargo run` execs the binary on Unix: the PID below is the operator's own.
bash -c "exec $cmd" >"$out/stdout" 2>"$out/stderr" &
pid=$!

fail() {
  echo "README main job: $*" >&2
  echo "--- stdout (last 40 lines)" >&2; tail -40 "$out/stdout" >&2 || true
  echo "--- stderr (last 40 lines)" >&2; tail -40 "$out/stderr" >&2 || true
  kill -KILL "$pid" 2>/dev/null || true
  exit 1
}

# The build comes first: allow it the time a cold release build takes on 2 cores.
kubeconfig=""
for _ in $(seq 1 1800); do
  kubeconfig="$(sed -n 's/^kubeconfig: //p' "$out/stdout" | head -1)"
  [ -n "$kubeconfig" ] && break
  kill -0 "$pid" 2>/dev/null || fail "exited before serving"
  sleep 1
done
[ -n "$kubeconfig" ] || fail "no kubeconfig line within 30 minutes"
export KUBECONFIG="$kubeconfig"
for kind in pgaccessrequests pgadmins evidenceagents pgtoolboxconsoles; do
  kubectl wait --for=condition=Ready "$kind" --all -A --timeout=120s >/dev/null \
    || fail "the example $kind did not all turn Ready"
done
echo "README main job: every example object is Ready; sending SIGINT (Ctrl-C)"
kill -INT "$pid"
code=0
wait "$pid" || code=$?
[ "$code" -eq 0 ] || fail "exit code $code after Ctrl-C (expected 0)"
if grep -n 'ERROR' "$out/stderr"; then
  fail "a clean stop logged ERROR"
fi
echo "README main job: stopped cleanly (exit 0, no ERROR)"
