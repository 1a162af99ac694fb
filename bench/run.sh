#!/usr/bin/env bash
# Measures dsync and the libraries users compare it with, on this machine,
# and writes bench/RESULTS.md (and the raw figures in bench/results/*.json).
#
#   bash bench/run.sh                          everything (about 35 minutes on 2 cores,
#                                              and the scale scenario about 30 more
#                                              for dsync, 10 to 15 for each peer)
#   bash bench/run.sh --only dsync             only dsync; the peers' last figures are kept
#   bash bench/run.sh --only dsync --scenarios handoff,idle
#                                              re-measure some figures, keep the others
#   bash bench/run.sh --only dsync-polling     dsync with WithWakeups(false): waiters
#                                              poll (handoff, graceful, idle and
#                                              throughput unless --scenarios says
#                                              otherwise)
#   bash bench/run.sh --only dsync-hints,dsync-polling-hints
#                                              dsync with direct hints on loopback
#                                              (ClientWithHints), with the store's
#                                              events, and without them (as on a
#                                              store without capped collections):
#                                              handoff, graceful, idle, throughput
#                                              and the scale scenario's waiters
#                                              unless --scenarios says otherwise
#   bash bench/run.sh --only dsync-linger      dsync with the RWMutexes' read linger on
#                                              (WithReadLinger(renew interval); off by
#                                              default): the rwmutex scenario unless
#                                              --scenarios says otherwise, its column
#                                              beside dsync's and the peers'
#   bash bench/run.sh --only dsync --as dsync@f28f297 --scenarios scale
#                                              measure dsync under another name
#                                              (bench/results/NAME.json): a
#                                              "before" kept beside the after;
#                                              dsync-hints, dsync-polling-hints and
#                                              dsync-linger go to NAME-hints,
#                                              NAME-polling-hints, NAME-linger
#   bash bench/run.sh --only dsync,mongo-lock,redsync,etcd --scenarios rwmutex,semaphore,once
#                                              issue 26's family: RWMutex readers,
#                                              Semaphore cost and handoff, Once
#                                              races (a peer without the primitive
#                                              shows "—" and why)
#   bash bench/run.sh --only dsync --scenarios partition
#                                              issue 45's partitioned election:
#                                              16 shards over 1, 2, 4 and 8
#                                              processes (about 10 minutes)
#   bash bench/run.sh --only dsync --scenarios lockset
#                                              issue 77's lock sets: random sets
#                                              of 2–4 of 12 keys taken by 8
#                                              processes, as lock sets and by
#                                              Mutexes one by one (the peers
#                                              have none)
#   bash bench/run.sh --uri "$URI" --name atlas-m10 [--server "Atlas M10, MongoDB 7.0"]
#                                              dsync against any deployment: its
#                                              figures, in a column of their own
#                                              (bench/results/NAME.json), beside
#                                              those kept; the server described as
#                                              --server says, else from buildInfo.
#                                              It uses the database dsyncbench
#                                              and drops the collections it made
#   bash bench/run.sh --quick                  tiny sizes: checks that everything runs
#                                              (prints its table, keeps nothing; about
#                                              15 minutes: dsync's scale scenario waits
#                                              for compaction)
#
#   bash bench/run.sh --only dsync,mongo-lock,redsync,etcd --scenarios scale -- -scale-keys 100,1000,10000,100000 -scale-kept-max 10000 -scale-load-budget 90m
#                                              issue 25's scale scenario with
#                                              100,000 compacted idle keys
#                                              (opt-in: loading runs at the pace
#                                              of FerretDB's commits, about 42
#                                              keys/s in that series: 40 minutes
#                                              for 100,000; the series of keys in
#                                              the collection stops at 10,000)
#
# Libraries: dsync, dsync-polling, dsync-hints, dsync-polling-hints,
# dsync-linger, mongo-lock, redsync, etcd (comma-separated
# for --only). Wake-ups are dsync's default: dsync-wakeups, the name they had
# while they were an option, means dsync. Any other bench/results/*.json (a
# run kept under another name with --as, such as a "before") is reported
# too, after these.
# Scenarios: uncontended, handoff, failover, graceful, idle, renewal,
# throughput, race, scale (its curves: bench/scale.svg), rwmutex (4 and 1
# processes taking the read side of one RWMutex), semaphore (uncontended
# Acquire(1)+Release, and a full semaphore's unit handed to a waiter), once
# (4 processes racing Do on a fresh key; Do on a done key), partition
# (leader.Partition: joins, leaves and kills timed to balance; the peers
# have none and show "—"), transfer (Election.Transfer to the candidate
# queued last, beside graceful; the peers have none and show "—"), lockset
# (8 processes take random sets of 2–4 of 12 keys, as lock sets and as
# Mutexes locked one by one in the keys' order; the peers have none).
#
# Servers, all on loopback, all stopped on exit:
#   - dsync and mongo-lock: MONGODB_URI if set, else an embedded FerretDB
#     (the one in go.mod, SQLite handler) in a temporary directory;
#   - redsync: redis-server, etcd: etcd (Debian packages redis-server and
#     etcd-server, installed with apt-get when missing and possible).
# Extra flags after "--" go to every measuring command, e.g. -- -runs 5.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

only="dsync,dsync-polling,dsync-hints,dsync-polling-hints,dsync-linger,mongo-lock,redsync,etcd"
scenarios=""
quick=""
as="" # dsync's figures under this name, in bench/results/$as.json
uri=""    # --uri: the server for dsync, instead of MONGODB_URI or the embedded one
server="" # --server: its description in the report
only_given=""
extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only="$2"; only_given=1; shift 2 ;;
	--scenarios) scenarios="$2"; shift 2 ;;
	--quick) quick="-quick"; shift ;;
	--as|--name) as="$2"; shift 2 ;;
	--uri) uri="$2"; shift 2 ;;
	--server) server="$2"; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	-h|--help) sed -n '2,/^# Extra flags/p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [[ ",$only," == *",dsync-wakeups,"* ]]; then
	# Wake-ups are dsync's default now: the dsync figures are theirs.
	only="${only//dsync-wakeups/dsync}"
fi
if [ -n "$uri" ]; then
	# A deployment of one's own: dsync's figures, under a name of their
	# own, so that the embedded server's column stays (the peers' and
	# dsync-polling's files have fixed names, which a run against another
	# server would overwrite).
	[ -n "$as" ] || { echo "run.sh: --uri needs --name NAME, the column its figures go in" >&2; exit 2; }
	[ -z "$only_given" ] || [ "$only" = dsync ] || { echo "run.sh: --uri measures dsync only" >&2; exit 2; }
	only=dsync
	MONGODB_URI="$uri"
fi
want() { [[ ",$only," == *",$1,"* ]]; }

log() { printf '%s run.sh: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=$(date +%s)

work="$(mktemp -d "${TMPDIR:-/tmp}/dsync-bench.XXXXXX")"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a loopback TCP port nobody listens on.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "run.sh: no free port" >&2
	return 1
}

# wait_port waits until something listens on port $1.
wait_port() {
	for _ in $(seq 150); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# ensure_pkg installs Debian package $1 unless command $2 exists.
ensure_pkg() {
	command -v "$2" >/dev/null && return 0
	command -v apt-get >/dev/null || { log "$2 missing and no apt-get"; return 1; }
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	log "installing $1 with apt-get"
	if [ ! -f "$work/apt-updated" ]; then
		$sudo apt-get update -qq >&2 && touch "$work/apt-updated" || return 1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$1" >&2 || return 1
	command -v "$2" >/dev/null
}

# --quick only checks that everything runs: its figures go to a temporary
# directory, never into bench/RESULTS.md.
resdir=bench/results
report=bench/RESULTS.md
if [ -n "$quick" ]; then
	resdir="$work/results"
	report="$work/RESULTS.md"
fi
mkdir -p "$resdir"
rev="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain -- dsync leader clockcheck 2>/dev/null)" ]; then
	rev="$rev+local changes"
fi

log "building"
go build -o "$work/dsyncbench" ./bench/cmd/dsyncbench
# The dsync command, whose status page the scale scenario times.
go build -o "$work/dsync" ./cmd/dsync
if want mongo-lock || want redsync || want etcd; then
	# bench/peers is not in go.work (its own island of dependencies).
	(cd bench/peers && GOWORK=off go build -o "$work/peerbench" ./cmd/peerbench)
fi

# The MongoDB-compatible server for dsync and mongo-lock; server_pid is
# the embedded FerretDB's process, whose CPU the idle scenario reports.
server_pid=""
if want dsync || want dsync-polling || want dsync-hints || want dsync-polling-hints || want dsync-linger || want mongo-lock; then
	if [ -n "${MONGODB_URI:-}" ]; then
		log "using ${uri:+--uri, }MONGODB_URI"
		mongo_uri="$MONGODB_URI"
	else
		"$work/dsyncbench" serve -stdin=false "$work/ferretdb" >"$work/ferretdb.uri" 2>"$work/ferretdb.log" </dev/null &
		pids+=($!)
		server_pid=$!
		for _ in $(seq 300); do
			[ -s "$work/ferretdb.uri" ] && break
			sleep 0.1
		done
		mongo_uri="$(head -n1 "$work/ferretdb.uri")"
		[ -n "$mongo_uri" ] || { cat "$work/ferretdb.log" >&2; log "FerretDB did not start"; exit 1; }
		log "FerretDB at $mongo_uri"
	fi
fi

results=()
failed=()

if want dsync; then
	log "measuring dsync"
	if MONGODB_URI="$mongo_uri" "$work/dsyncbench" -cli "$work/dsync" -out "$resdir/${as:-dsync}.json" ${as:+-name "$as"} ${server:+-server "$server"} -rev "$rev" ${server_pid:+-server-pid "$server_pid"} \
		${scenarios:+-scenarios "$scenarios"} $quick "${extra[@]}"; then :; else failed+=(dsync); fi
fi

if want dsync-polling; then
	log "measuring dsync without wake-ups (waiters poll)"
	if MONGODB_URI="$mongo_uri" "$work/dsyncbench" -cli "$work/dsync" -wakeups off -hints off -out "$resdir/dsync-polling.json" -rev "$rev" ${server_pid:+-server-pid "$server_pid"} \
		-scenarios "${scenarios:-handoff,graceful,idle,throughput}" $quick "${extra[@]}"; then :; else failed+=(dsync-polling); fi
fi

# dsync with direct hints: the scenarios of dsync-polling, and the scale
# scenario's waiters (its idle keys are no different with hints: left out
# unless -- -scale-keys says otherwise).
for lib in dsync-hints dsync-polling-hints; do
	want "$lib" || continue
	wake=on
	[ "$lib" = dsync-polling-hints ] && wake=off
	# --as NAME: NAME-hints, NAME-polling-hints.
	name="$lib"
	[ -n "$as" ] && name="$as${lib#dsync}"
	log "measuring $lib as $name (direct hints on loopback, wake-ups $wake)"
	if MONGODB_URI="$mongo_uri" "$work/dsyncbench" -cli "$work/dsync" -wakeups "$wake" -hints on -out "$resdir/$name.json" -name "$name" -rev "$rev" ${server_pid:+-server-pid "$server_pid"} \
		-scenarios "${scenarios:-handoff,graceful,idle,throughput,scale}" -scale-keys none $quick "${extra[@]}"; then :; else failed+=("$lib"); fi
done

# dsync with the RWMutexes' read linger on (opt-in): the rwmutex scenario,
# whose readers churn RLock and RUnlock, the case it is for.
if want dsync-linger; then
	# --as NAME: NAME-linger.
	name=dsync-linger
	[ -n "$as" ] && name="$as-linger"
	log "measuring dsync-linger as $name (WithReadLinger(renew interval))"
	if MONGODB_URI="$mongo_uri" "$work/dsyncbench" -cli "$work/dsync" -read-linger on -out "$resdir/$name.json" -name "$name" -rev "$rev" ${server_pid:+-server-pid "$server_pid"} \
		-scenarios "${scenarios:-rwmutex}" $quick "${extra[@]}"; then :; else failed+=(dsync-linger); fi
fi

if want mongo-lock; then
	log "measuring mongo-lock"
	if "$work/peerbench" -lib mongo-lock -mongo-uri "$mongo_uri" -out "$resdir/mongo-lock.json" ${server_pid:+-server-pid "$server_pid"} \
		${scenarios:+-scenarios "$scenarios"} $quick "${extra[@]}"; then :; else failed+=(mongo-lock); fi
fi

if want redsync; then
	if ensure_pkg redis-server redis-server; then
		port="$(free_port)"
		mkdir -p "$work/redis"
		redis-server --bind 127.0.0.1 --port "$port" --dir "$work/redis" --daemonize no \
			>"$work/redis.log" 2>&1 &
		pids+=($!)
		wait_port "$port" || { cat "$work/redis.log" >&2; exit 1; }
		log "measuring redsync (redis-server on 127.0.0.1:$port)"
		if "$work/peerbench" -lib redsync -redis "127.0.0.1:$port" -out "$resdir/redsync.json" -server-pid "${pids[-1]}" \
			${scenarios:+-scenarios "$scenarios"} $quick "${extra[@]}"; then :; else failed+=(redsync); fi
		kill "${pids[-1]}" 2>/dev/null || true
	else
		log "redsync not measured: redis-server could not be installed"
		failed+=(redsync)
	fi
fi

if want etcd; then
	if ensure_pkg etcd-server etcd; then
		cport="$(free_port)"
		pport="$(free_port)"
		etcd --name bench --data-dir "$work/etcd" \
			--listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
			--listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
			--initial-cluster "bench=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 &
		pids+=($!)
		wait_port "$cport" || { tail -20 "$work/etcd.log" >&2; exit 1; }
		log "measuring etcd (etcd on 127.0.0.1:$cport)"
		if "$work/peerbench" -lib etcd -etcd "127.0.0.1:$cport" -out "$resdir/etcd.json" -server-pid "${pids[-1]}" \
			${scenarios:+-scenarios "$scenarios"} $quick "${extra[@]}"; then :; else failed+=(etcd); fi
		kill "${pids[-1]}" 2>/dev/null || true
	else
		log "etcd not measured: etcd-server could not be installed"
		failed+=(etcd)
	fi
fi

for lib in dsync dsync-polling dsync-hints dsync-polling-hints dsync-linger mongo-lock redsync etcd; do
	if [ -f "$resdir/$lib.json" ]; then results+=("$resdir/$lib.json"); fi
done
for f in "$resdir"/*.json; do
	case "$(basename "$f" .json)" in
	dsync|dsync-polling|dsync-hints|dsync-polling-hints|dsync-linger|mongo-lock|redsync|etcd) ;;
	*) [ -f "$f" ] && results+=("$f") ;;
	esac
done
cmd="bash bench/run.sh"
[ -n "$quick" ] && cmd="$cmd --quick"
"$work/dsyncbench" report -o "$report" -command "$cmd" "${results[@]}"
if [ -n "$quick" ]; then
	cat "$report"
	log "--quick: the table above is not kept (bench/RESULTS.md is unchanged)"
fi
log "wrote $report from ${results[*]} in $(( $(date +%s) - started )) s"
if [ ${#failed[@]} -gt 0 ]; then
	log "failed: ${failed[*]}"
	exit 1
fi
