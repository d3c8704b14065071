#!/bin/bash
# conductor_scale: what one server conductor costs per client (issue 26 item 5, docs/scale.md).
# A federation of one server and N clients (N in NODES), every node a hako-launch with no process
# (a federation node may have none: its master steps its world, its conductor links it), each in
# its own hako-netlab node (network, mount, pid, IPC and UTS namespaces, its own /dev/shm),
# reaching the server by address. Without namespaces (not root, no iproute2) the nodes run as
# domains of this machine on loopback, and the output says so.
#
# For each variant (publish mode x pacing) and N, ROUNDS times (interleaved: every variant and N
# in one round before the next round), the server runs WORLD_S of world time at delta 1 ms and
# Dmax 10 ms; then the medians over the rounds:
#   server_cpu_s      the server's hako-launch (its master, conductor threads, everything) CPU
#                     from the start of the run to its exit: its getrusage as its parent saw it
#                     (bash `times`), minus /proc/PID/stat at "simulation running"
#   msgs_in/out       the server's own counters (hako_conductor_node_stats, summed over its
#                     peers, the "messages:" line hako-launch prints): in = the clients' time
#                     messages, out = control messages to them
#   pub_per_step      the server's time messages as a client counted them (median client): one
#                     PUB send each, which ZeroMQ writes to each of the N clients' connections
#   client_cpu_s      a client's hako-launch CPU over its whole life (median client)
#   server_core_share server_cpu_s / wall_s: 1.0 is one core, all the server's process can use
#                     of this machine for its master thread and its conductor's threads together
#   own_cpu_share     (server + every client) CPU / (wall_s x CPUs): the federation's share of
#                     the machine
#   host_busy         the machine's busy share of all CPUs over the run (/proc/stat: includes
#                     whatever else runs on it)
#
# usage: bench/conductor_scale.sh BUILD_DIR [ROUNDS (3)] [WORLD_S (10)] [NODES ("1 2 4 8 16 32")]
#                                 [VARIANTS ("immediate-afap immediate-rtf1 boundary-afap
#                                 boundary-rtf1")]
#        bench/conductor_scale.sh BUILD_DIR --quick   (ctest: 1 round, 1 s, 2 and 4 nodes)
# HAKO_SCALE_LOOPBACK=1 runs on loopback even where a lab can be made.
set -u

# ---- inside a node: run one hako-launch, report its CPU ----
if [ "${1:-}" = --node-run ]; then
	# $2 launch file, $3 its output file. The CPU of the hako-launch in seconds: at the start of
	# the run (ticks of /proc/PID/stat) and in all (getrusage of the children, precise). `times`
	# must run in this shell (a pipeline's subshell has no children), and what this shell ran
	# before the start (grep, sleep) is subtracted.
	hz=$(getconf CLK_TCK)
	secs() { # the children's line of a `times` output file, in seconds
		sed -n 2p "$1" | awk '{ split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2])
			sub("s", "", s[2]); printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
	}
	: >"$3"
	"$HAKO_SCALE_LAUNCH" "$2" >"$3" 2>&1 &
	p=$!
	c0=0
	while kill -0 "$p" 2>/dev/null; do
		if grep -q 'simulation running\|started the federation' "$3"; then
			c0=$(awk -v hz="$hz" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$p/stat" 2>/dev/null)
			break
		fi
		sleep 0.01
	done
	times >"$3.t0"
	wait "$p"
	rc=$?
	times >"$3.t1"
	t0=$(secs "$3.t0") t1=$(secs "$3.t1")
	rm -f "$3.t0" "$3.t1"
	echo "scale-cpu: start ${c0:-0} total $(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.3f", a - b}') rc $rc" >>"$3"
	exit "$rc"
fi

BIN=$(cd "$1" && pwd) || exit 2
if [ "${2:-}" = --quick ]; then
	set -- "$1" 1 1 "2 4"
fi
ROUNDS=${2:-3} WORLD_S=${3:-10} NODES=${4:-1 2 4 8 16 32}
VARIANTS=${5:-immediate-afap immediate-rtf1 boundary-afap boundary-rtf1}
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
export HAKO_SCALE_LAUNCH=$BIN/bin/hako-launch
unset HAKO_DOMAIN HAKO_LOG
max=0
for n in $NODES; do [ "$n" -gt "$max" ] && max=$n; done

# ---- the lab (or loopback), around the whole run ----
if [ -z "${HAKO_SCALE_IN:-}" ]; then
	export HAKO_SCALE_IN=loopback
	why=
	if [ -n "${HAKO_SCALE_LOOPBACK:-}" ]; then
		why="HAKO_SCALE_LOOPBACK is set"
	elif ! why=$("$BIN/bin/hako-netlab" probe 2>&1); then
		:
	else
		why=
	fi
	if [ -z "$why" ]; then
		lab=$(mktemp -d)
		{
			printf '{"subnet": "10.226.0.0/24", "nodes": [{"name": "srv-01", "address": "10.226.0.11"}'
			for i in $(seq "$max"); do
				printf ', {"name": "cli-%02d", "address": "10.226.0.%d"}' "$i" $((11 + i))
			done
			printf ']}\n'
		} >"$lab/lab.json"
		HAKO_SCALE_IN=lab "$BIN/bin/hako-netlab" run "$lab/lab.json" --name "cs$$" -- \
			"$SELF" "$@"
		rc=$?
		rm -rf "$lab"
		exit "$rc"
	fi
	echo "# conductor_scale: on loopback, not in a lab (every node a domain of this machine): $why" >&2
fi

tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node_addr() { # node index (0 = the server) -> its address
	if [ "$HAKO_SCALE_IN" = lab ]; then echo "10.226.0.$((11 + $1))"; else echo 127.0.0.1; fi
}
in_node() { # NODE CMD...: run CMD in the node (the lab) or here (loopback)
	local node=$1
	shift
	if [ "$HAKO_SCALE_IN" = lab ]; then
		"$HAKO_NETLAB_EXE" exec "$HAKO_NETLAB" "$node" -- "$@"
	else
		"$@"
	fi
}
cli() { printf 'cli-%02d' "$1"; }

# The keys of every node, made once: every conductor file names this folder.
mkdir -p "$tmp/keys" "$tmp/k"
timing='"delta_time_usec": 1000, "max_delay_time_usec": 10000'
{
	printf '{"server_machine_id": "srv-01", %s, "keys_dir": "%s", "clients": [' "$timing" "$tmp/keys"
	for i in $(seq "$max"); do
		[ "$i" -gt 1 ] && printf ', '
		printf '{"client_node_id": "%s"}' "$(cli "$i")"
	done
	printf '], "control_address": "tcp://127.0.0.1:7000", "time_address": "tcp://127.0.0.1:7001"}\n'
} >"$tmp/k/srv-01.json"
for i in $(seq "$max"); do
	printf '{"server_machine_id": "srv-01", "node_id": "%s", %s, "keys_dir": "%s", "control_address": "tcp://127.0.0.1:7000", "time_address": "tcp://127.0.0.1:7001"}\n' \
		"$(cli "$i")" "$timing" "$tmp/keys" >"$tmp/k/$(cli "$i").json"
done
"$BIN/bin/hako-conductor" keygen "$tmp"/k/*.json >/dev/null || exit 1

port=$((20000 + ($$ % 2000) * 8))
# One run: variant $1, N clients $2, round $3. Appends a line to $tmp/runs.
run_one() {
	local variant=$1 n=$2 r=$3 d="$tmp/run-$1-$2-$3" mode rtf i p
	mkdir -p "$d"
	case $variant in
	immediate-*) mode='"simtime_publish_mode": "immediate"' ;;
	boundary-*) mode='"simtime_publish_mode": "delta_boundary", "simtime_publish_interval_usec": 5000' ;;
	esac
	case $variant in
	*-afap) rtf=0 ;;
	*-rtf1) rtf=1 ;;
	esac
	# Loopback: fresh ports per run (another run's TIME_WAIT, other programs). A lab node has
	# its own network: the same ones.
	local ctl=7000 tim=7001 srv
	if [ "$HAKO_SCALE_IN" = loopback ]; then
		port=$((port + 2))
		ctl=$port tim=$((port + 1))
	fi
	srv=$(node_addr 0)
	local common="$timing, $mode, \"keys_dir\": \"$tmp/keys\", \"control_address\": \"tcp://$srv:$ctl\", \"time_address\": \"tcp://$srv:$tim\""
	{
		printf '{"server_machine_id": "srv-01", %s, "clients": [' "$common"
		for i in $(seq "$n"); do
			[ "$i" -gt 1 ] && printf ', '
			printf '{"client_node_id": "%s"}' "$(cli "$i")"
		done
		printf ']}\n'
	} >"$d/srv-01.json"
	printf '{"domain": "cs%d-srv-01", "log_dir": "%s/logs/srv-01", "processes": [],
	  "conductor": {"federation": "srv-01.json", "real_time_factor": %s, "stop_at_usec": %d}}\n' \
		$$ "$d" "$rtf" $((WORLD_S * 1000000)) >"$d/srv-01.launch.json"
	for i in $(seq "$n"); do
		printf '{"server_machine_id": "srv-01", "node_id": "%s", %s}\n' "$(cli "$i")" "$common" \
			>"$d/$(cli "$i").json"
		printf '{"domain": "cs%d-%s", "log_dir": "%s/logs/%s", "processes": [],
		  "conductor": {"federation": "%s.json", "real_time_factor": %s}}\n' \
			$$ "$(cli "$i")" "$d" "$(cli "$i")" "$(cli "$i")" "$rtf" >"$d/$(cli "$i").launch.json"
	done
	local s0 s1
	s0=$(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $5 + $6; exit}' /proc/stat)
	pids=
	in_node srv-01 "$SELF" --node-run "$d/srv-01.launch.json" "$d/srv-01.out" &
	pids="$pids $!"
	for i in $(seq "$n"); do
		in_node "$(cli "$i")" "$SELF" --node-run "$d/$(cli "$i").launch.json" "$d/$(cli "$i").out" &
		pids="$pids $!"
	done
	local failed=0
	for p in $pids; do wait "$p" || failed=1; done
	pids=
	s1=$(awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $5 + $6; exit}' /proc/stat)
	if [ "$failed" != 0 ] || ! grep -q 'done: world time' "$d/srv-01.out"; then
		echo "conductor_scale: $variant n=$n round $r failed; the server said:" >&2
		tail -n 20 "$d/srv-01.out" >&2
		for i in $(seq "$n"); do
			grep -q 'done: world time' "$d/$(cli "$i").out" && continue
			echo "... and $(cli "$i"):" >&2
			tail -n 5 "$d/$(cli "$i").out" >&2
			break
		done
		return 1
	fi
	# variant n round world_s wall_s rtf srv_cpu_run msgs_in msgs_out pub cli_cpu host_busy
	awk -v variant="$variant" -v n="$n" -v r="$r" -v s0="$s0" -v s1="$s1" '
		FILENAME ~ /srv-01.out$/ && /done: world time/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "time" && $(i - 1) == "world") world = $(i + 1)
				if ($i == "wall") wall = $(i - 3)
			}
		}
		FILENAME ~ /srv-01.out$/ && /messages: [0-9]+ in/ {
			for (i = 1; i <= NF; i++) { if ($i == "in,") { min = $(i - 1); mout = $(i + 1) } }
		}
		FILENAME ~ /srv-01.out$/ && /^scale-cpu:/ { scpu = $5 - $3 }
		FILENAME !~ /srv-01.out$/ && /messages: [0-9]+ in/ {
			for (i = 1; i <= NF; i++) if ($i == "in,") pub[np++] = $(i - 1)
		}
		FILENAME !~ /srv-01.out$/ && /^scale-cpu:/ { ccpu[nc++] = $5; csum += $5 }
		function med(v, k,   i, j, t) {
			for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return k % 2 ? v[int(k / 2)] : (v[k / 2 - 1] + v[k / 2]) / 2
		}
		END {
			split(s0, a, " "); split(s1, b, " ")
			busy = (b[1] - a[1]) / ((b[1] - a[1]) + (b[2] - a[2]) + 1e-9)
			printf "%s %d %d %s %s %.3f %.3f %d %d %d %.3f %.3f %.3f\n", variant, n, r, world, wall,
			       world / wall, scpu, min, mout, med(pub, np), med(ccpu, nc), busy, csum
		}' "$d/srv-01.out" "$d"/cli-*.out >>"$tmp/runs"
	rm -rf "$d"
}

for r in $(seq "$ROUNDS"); do
	for v in $VARIANTS; do
		for n in $NODES; do
			echo "== round $r: $v, $n clients" >&2
			run_one "$v" "$n" "$r" || exit 1
		done
	done
done

echo "bench,variant,nodes,world_steps,wall_s,rtf,server_cpu_s,server_cpu_us_per_step,msgs_in_per_step,msgs_out_per_step,pub_per_step,client_cpu_s_median,server_core_share,own_cpu_share,host_busy,rounds"
# Medians over the rounds, per (variant, nodes), in the order run.
awk -v where="$HAKO_SCALE_IN" -v ncpu="$(nproc)" '
	function med(v, k,   i, j, t) {
		for (i = 0; i < k; i++) for (j = i + 1; j < k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return k % 2 ? v[int(k / 2)] : (v[k / 2 - 1] + v[k / 2]) / 2
	}
	{
		k = $1 " " $2
		if (!(k in cnt)) order[nk++] = k
		c = cnt[k]++
		world[k] = $4; wall[k, c] = $5; rtf[k, c] = $6; scpu[k, c] = $7; steps = $4 * 1000
		min[k, c] = $8 / steps; mout[k, c] = $9 / steps; pub[k, c] = $10 / steps
		ccpu[k, c] = $11; busy[k, c] = $12; per[k, c] = $7 / steps * 1e6
		score[k, c] = $7 / $5; own[k, c] = ($7 + $13) / $5 / ncpu
		rounds[k] = rounds[k] " " $6
	}
	END {
		for (o = 0; o < nk; o++) {
			k = order[o]; split(k, kv, " "); c = cnt[k]
			for (i = 0; i < c; i++) {
				a1[i] = wall[k, i]; a2[i] = rtf[k, i]; a3[i] = scpu[k, i]; a4[i] = per[k, i]
				a5[i] = min[k, i]; a6[i] = mout[k, i]; a7[i] = pub[k, i]; a8[i] = ccpu[k, i]
				a9[i] = busy[k, i]; a10[i] = score[k, i]; a11[i] = own[k, i]
			}
			printf "conductor_scale,%s,%d,%d,%.3f,%.3f,%.3f,%.2f,%.4f,%.5f,%.4f,%.3f,%.3f,%.3f,%.2f,%d\n", kv[1], kv[2],
			       world[k] * 1000, med(a1, c), med(a2, c), med(a3, c), med(a4, c), med(a5, c),
			       med(a6, c), med(a7, c), med(a8, c), med(a10, c), med(a11, c), med(a9, c), c
		}
		printf "# nodes: %s (each a hako-netlab node: own network, /dev/shm, pids; or loopback: domains of this machine)\n", where
		printf "# delta 1 ms, Dmax 10 ms; boundary = delta_boundary every 5 ms; afap = as fast as possible, rtf1 = real time\n"
		for (o = 0; o < nk; o++) printf "# rtf per round %s:%s\n", order[o], rounds[order[o]]
	}' "$tmp/runs"
echo "# cpus: $(nproc); loadavg now: $(cut -d' ' -f1-3 /proc/loadavg)"
