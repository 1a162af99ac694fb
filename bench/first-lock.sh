#!/usr/bin/env bash
# A fresh process's first Lock, before and after, in one run: bench/first-lock.md.
#
#   bash bench/first-lock.sh [REV ...]
#
# Builds bench/cmd/firstlock in this tree and in a copy of each REV (git
# archive; the command's file is copied in, it uses only the exported API),
# starts the embedded server (internal/ferretserve, FerretDB on SQLite, on
# loopback), has one Client lock and unlock KEYS idle keys once, then runs
# ROUNDS rounds; in each, every build (and this tree with ClientWithHints("",
# ""), as "now, hints off") times PER fresh Clients' first Lock+Unlock, the
# builds in a shuffled order. It prints each build's p50s and its commands by
# phase and cause. Environment: KEYS (100), ROUNDS (6), PER (5).
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${KEYS:-100} rounds=${ROUNDS:-6} per=${PER:-5}
tmp=$(mktemp -d)
srv=""
cleanup() {
	if [[ -n $srv ]]; then kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

now=$(git rev-parse --short HEAD)
(cd bench && go build -o "$tmp/now" ./cmd/firstlock)
labels=("now@$now" "now@$now,hints-off")
bins=("$tmp/now" "$tmp/now -hints-off")
for rev in "$@"; do
	short=$(git rev-parse --short "$rev")
	mkdir -p "$tmp/tree-$short"
	git archive "$rev" | tar -x -C "$tmp/tree-$short"
	mkdir -p "$tmp/tree-$short/bench/cmd/firstlock"
	cp bench/cmd/firstlock/main.go "$tmp/tree-$short/bench/cmd/firstlock/"
	(cd "$tmp/tree-$short/bench" && go build -o "$tmp/rev-$short" ./cmd/firstlock)
	labels+=("$short")
	bins+=("$tmp/rev-$short")
done
(cd internal/ferretserve && go build -o "$tmp/ferretserver" ./cmd/ferretserver)

# The server stops when its stdin reaches EOF: the fifo's writer is this
# script.
mkfifo "$tmp/in"
"$tmp/ferretserver" -dir "$tmp/data" <"$tmp/in" >"$tmp/uri" &
srv=$!
exec 3>"$tmp/in"
for _ in $(seq 100); do [[ -s $tmp/uri ]] && break; sleep 0.1; done
uri=$(head -1 "$tmp/uri")
echo "server $uri; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/now" -uri "$uri" -load "$keys"

for r in $(seq "$rounds"); do
	for i in $(seq 0 $((${#bins[@]} - 1)) | shuf); do
		${bins[$i]} -uri "$uri" -keys "$keys" -n "$per" -label "${labels[$i]}" >>"$tmp/lines"
	done
	echo "round $r/$rounds done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
"$tmp/now" -summary <"$tmp/lines"
