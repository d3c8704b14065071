#!/bin/bash
# show.sh: the drone show (make run DEMO=show). A federation of one server node, srv-01, and K
# client nodes cli-01..cli-0K, each node a machine of its own in a hako-netlab lab (its own
# network, /dev/shm, pids; reached only by its address) and run by a hako-launch of its own.
# N drones, RD-Full, load balanced across the client nodes by the fleet monitor on srv-01, fly
# the mission (take off, the "HAKO" letters at 3 s, a circle at 18 s, landing at 33 s). At
# --kill-at-usec of world time one client node is killed whole (hako-netlab kill: every process
# at once); the server drops it and restarts its drones on the others from their checkpoints.
# Then the same mission by one host in one process, and the report (show_report.sh).
#
# Without the lab (not root, or hako-netlab probe fails), or with --loopback, the same show runs
# on this machine's loopback: one hako-launch per node, every address 127.0.0.1, distinct ports.
#
# usage: show.sh --build BUILD_DIR [--drones N] [--nodes K] [--kill NODE|none]
#                [--kill-at-usec T] [--dmax-usec D] [--loopback] [--viewer-port P | --no-viewer]
#                [--out DIR] [--even] [--stop-usec T] [--bench]
# Defaults: 1024 drones, 8 client nodes, the middle one killed at 12 s, Dmax 20 ms, the viewer on
# port 8080 (0: any free port), files in ./show-run, the whole mission (--stop-usec 38000000).
# --bench (bench/show_lab.sh): no viewer, no reference run, no report; the last lines are the
# server's done line and, after a kill, "take-over: ... N ms".
# Exit status: 0 when the show ran and every check of the report held.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/../../test/common/hako_test.sh"

build='' drones=1024 nodes=8 kill='' kill_at=12000000 dmax=20000 loopback='' vport=8080
out='' even='' stop=38000000 bench=''
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2 && shift ;;
	--drones) drones=$2 && shift ;;
	--nodes) nodes=$2 && shift ;;
	--kill) kill=$2 && shift ;;
	--kill-at-usec) kill_at=$2 && shift ;;
	--dmax-usec) dmax=$2 && shift ;;
	--loopback) loopback=1 ;;
	--viewer-port) vport=$2 && shift ;;
	--no-viewer) vport='' ;;
	--out) out=$2 && shift ;;
	--even) even=--even ;;
	--stop-usec) stop=$2 && shift ;;
	--bench) bench=1 vport='' ;;
	-h | --help)
		sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "show.sh: unknown argument $1 (--help)" >&2
		exit 2
		;;
	esac
	shift
done
[ -n "$build" ] || {
	echo "show.sh: --build BUILD_DIR is required" >&2
	exit 2
}
build=$(cd "$build" && pwd)
bin=$build/bin
nl=$bin/hako-netlab
[ -n "$kill" ] || kill=$(printf 'cli-%02d' $(((nodes + 1) / 2)))
out=${out:-$PWD/show-run}
rm -rf "$out"
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
name=show-$$
unset HAKO_DOMAIN

# Where the nodes run: the lab, or loopback, said before anything else.
if [ -z "$loopback" ]; then
	if [ "$(id -u)" != 0 ]; then
		loopback="not root"
	elif ! why=$("$nl" probe 2>&1); then
		loopback="hako-netlab probe: $why"
	fi
else
	loopback="--loopback"
fi
if [ -n "$loopback" ]; then
	echo "show: LOOPBACK ($loopback): every node is a hako-launch on this machine's loopback, 127.0.0.1, ports of its own"
else
	echo "show: LAB: every node a machine of its own (hako-netlab lab '$name': own network, /dev/shm, pids), reached by its address"
fi

pids=() lab_up='' viewer_pid=''
cleanup() {
	local p
	[ -z "$viewer_pid" ] || kill -TERM "$viewer_pid" 2>/dev/null
	for p in "${pids[@]}"; do
		[ -z "$p" ] || kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}" $viewer_pid; do
		[ -z "$p" ] || wait "$p" 2>/dev/null
	done
	[ -z "$lab_up" ] || "$nl" down "$name" >/dev/null 2>&1
	while read -r _ _ dom; do
		clean_domains "$bin/hako-cmd" "$dom"
	done <"$out/config/nodes" 2>/dev/null
	clean_domains "$bin/hako-cmd" "$name-ref"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port=''
if [ -n "$loopback" ]; then
	port=$(free_ports 3) || die "no free ports"
fi
bash "$here/show_config.sh" --dir "$out/config" --bin "$build" --name "$name" --drones "$drones" \
	--nodes "$nodes" --dmax-usec "$dmax" --stop-usec "$stop" ${port:+--loopback "$port"} $even ||
	die "show_config.sh failed"
echo "show: $drones drones on $nodes client nodes (hosts start with $(sed -n 's/^balance=//p' "$out/config/show.env"), the last with the rest), Dmax $((dmax / 1000)) ms, domains $name-<node>; $kill is killed at $((kill_at / 1000)) ms of world time; files in $out"

if [ -z "$loopback" ]; then
	"$nl" up --name "$name" --while-pid $$ "$out/config/lab.json" >"$out/lab.txt" 2>&1 ||
		{ cat "$out/lab.txt"; die "hako-netlab up failed"; }
	lab_up=1
	"$nl" status "$name" | sed 's/^/show: lab: /'
fi

# in_node NODE CMD...: CMD on NODE (in its namespaces in the lab).
in_node() {
	local node=$1
	shift
	if [ -z "$loopback" ]; then
		"$nl" exec "$name" "$node" -- "$@"
	else
		"$@"
	fi
}
# node_launch NODE: the node's hako-launch (in the lab it dies with the lab; on loopback a
# timeout ends it should this script be killed).
node_launch() {
	if [ -z "$loopback" ]; then
		in_node "$1" "$bin/hako-launch" "$out/config/$1/launch.json"
	else
		timeout -s KILL 3600 "$bin/hako-launch" "$out/config/$1/launch.json"
	fi
}
# world_usec NODE: the node's world time in us (nothing if its domain has none yet).
world_usec() {
	in_node "$1" "$bin/hako-cmd" -d "$name-$1" status 2>/dev/null |
		awk '/^world time/ {printf "%d", $3 * 1000000}'
}

# tree_pids, kill_tree: a node's processes killed as its machine's death would.
# shellcheck source-path=SCRIPTDIR
. "$here/../../test/common/proc_tree.sh"

# secs T0: the seconds since T0 (date +%s%N).
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}'; }

mapfile -t ids < <(awk '{print $1}' "$out/config/nodes")
t0=$(date +%s%N)
for i in "${!ids[@]}"; do
	id=${ids[$i]}
	node_launch "$id" >"$out/$id.txt" 2>&1 &
	pids[i]=$!
done

# The view: hako-viewer on srv-01's domain. In the lab it runs in srv-01's mount, IPC and pid
# namespaces (it sees srv-01's /dev/shm) but in this machine's network, so that a browser here
# can open it. Not with --rd: following the RD config opens every drone's PDU channels, which
# fill srv-01's domain (4096 of them for 1024 drones) before its conductor can open the EUs'
# status and context channels (its start then fails, "capacity exhausted"); the drones' PDUs
# stay on the client nodes anyway.
if [ -n "$vport" ]; then
	for ((i = 0; i < 600; i++)); do
		in_node srv-01 "$bin/hako-cmd" -d "$name-srv-01" status >/dev/null 2>&1 && break
		alive "${pids[0]}" || break
		sleep 0.1
	done
	vcmd=("$bin/hako-viewer" -d "$name-srv-01" -p "$vport" --rate-hz 5)
	if [ -z "$loopback" ]; then
		holder=$(awk '$1 == "node" && $2 == "srv-01" {print $3}' "/run/hako-netlab/$name/state")
		nsenter -t "$holder" -m -i -p "${vcmd[@]}" >"$out/viewer.txt" 2>&1 &
	else
		"${vcmd[@]}" >"$out/viewer.txt" 2>&1 &
	fi
	viewer_pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "Foxglove" "$out/viewer.txt" 2>/dev/null && break
		alive "$viewer_pid" || break
		sleep 0.1
	done
	grep -E "read-only at|Foxglove|error|cannot" "$out/viewer.txt" | sed 's/^hako-viewer: /show: viewer: /'
fi

# The kill: when the node's world time passes kill_at, every process of it at once.
kidx=''
for i in "${!ids[@]}"; do [ "${ids[$i]}" = "$kill" ] && kidx=$i; done
if [ "$kill" != none ] && [ -n "$kidx" ]; then
	t=''
	while alive "${pids[$kidx]}"; do
		t=$(world_usec "$kill")
		[ -n "$t" ] && [ "$t" -ge "$kill_at" ] && break
		sleep 0.05
	done
	if [ -n "$t" ] && [ "$t" -ge "$kill_at" ]; then
		if [ -z "$loopback" ]; then
			"$nl" kill "$name" "$kill" | sed 's/^/show: /'
		else
			# What a dead machine does: every process of the node at once (its timeout, its
			# hako-launch with the conductor, and the assets it started): kill_tree.
			kp=$(kill_tree "${pids[$kidx]}")
			echo "show: node $kill killed: pids $kp"
		fi
		echo "show: killed $kill at world time $t us (wall $(secs "$t0") s)" |
			tee "$out/killed.txt"
	else
		echo "show: $kill ended before world time $kill_at us: not killed"
	fi
fi

rc=0
for i in "${!ids[@]}"; do
	wait "${pids[$i]}"
	r=$?
	[ "$i" = "$kidx" ] || [ "$r" -eq 0 ] || {
		echo "show: node ${ids[$i]} exited with $r"
		rc=1
	}
	pids[i]=''
done
wall=$(secs "$t0")
echo "show: the federation ended in $wall s of wall time"
[ -z "$viewer_pid" ] || {
	kill -TERM "$viewer_pid" 2>/dev/null
	wait "$viewer_pid" 2>/dev/null
	viewer_pid=''
}
[ -z "$lab_up" ] || {
	"$nl" down "$name" >/dev/null 2>&1
	lab_up=''
}

if [ -n "$bench" ]; then
	grep -h "^hako-launch: done: world time" "$out/srv-01.txt" | sed 's/^/show: srv-01: /'
	last=$(sed -n "s/.*client $kill lost (its last world time \([0-9.]*\) s).*/\1/p" "$out/srv-01.txt")
	first=$(cat "$out"/config/trace/rd-*.jsonl 2>/dev/null | grep '"ev":"restart"' |
		sed 's/.*"t":\([0-9]*\).*/\1/' | sort -n | head -n 1)
	[ -z "$last" ] || [ -z "$first" ] || awk -v a="$last" -v b="$first" \
		'BEGIN {printf "show: take-over: lost at %s s, first restart at %d ms: %d ms\n", a, b / 1000, b / 1000 - a * 1000 + 0.5}'
	exit "$rc"
fi

# The same mission by one host in one process: the bytes the nodes must end with.
cat >"$out/config/ref.json" <<JSON
{"domain": "$name-ref",
 "conductor": {"delta_usec": 1000, "max_delay_usec": 1000, "stop_at_usec": $(sed -n 's/^stop=//p' "$out/config/show.env")},
 "log_dir": "$out/logs/ref", "path": ["$build/samples/fleet"],
 "processes": [{"name": "ref", "command": "fleet-host",
                "args": ["--drones", "$drones", "--final", "$out/final-ref.txt",
                         "--out", "$out/ref-out"],
                "domain_needs": ["--print-needs"],
                "wait_for": {"asset": "fleet-host-0"}}]}
JSON
echo "show: the same mission by one host in one process (the reference)"
mkdir -p "$out/ref-out"
"$bin/hako-launch" --quiet "$out/config/ref.json" >"$out/ref.txt" 2>&1 ||
	{ tail -n 5 "$out/ref.txt"; echo "show: the reference run failed"; rc=1; }

echo "show: report"
bash "$here/show_report.sh" --dir "$out" --build "$build" --kill "$kill" \
	--wall "$wall" ${loopback:+--loopback} || rc=1
exit "$rc"
