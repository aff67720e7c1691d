#!/usr/bin/env bash
# Prints one of the README's set-up commands exactly as the README writes it (its comment
# dropped), so CI runs what a newcomer copies instead of a retyped copy that can drift:
#   main  the main job on the embedded default (`cargo run --release -- sim`)
#   test  the test command (`bash tests/real/setup.sh && cargo test`)
# Fails when the README's "## Set up" block no longer holds such a line.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:?usage: readme-commands.sh main|test}"
# The first fenced block after the "## Set up" heading.
block="$(awk '/^## Set up/{s=1} s&&/^```/{n++; next} s&&n==1{print} n>=2{exit}' README.md)"
case "$which" in
  main) pattern='^cargo run --release -- sim( |$)' ;;
  test) pattern='cargo test( |$)' ;;
  *) echo "readme-commands.sh: unknown command '$which'" >&2; exit 2 ;;
esac
line="$(printf '%s\n' "$block" | grep -E "$pattern" | head -1 || true)"
if [ -z "$line" ]; then
  echo "readme-commands.sh: README.md's Set up block has no '$which' command" >&2
  exit 1
fi
# Drop the trailing comment (`  # ...`); the commands themselves hold no '#'.
printf '%s\n' "${line%%#*}" | sed -e 's/[[:space:]]*$//'
