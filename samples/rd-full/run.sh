#!/usr/bin/env bash
# The RD-Full demo with one command (docs/rd.md, "RD-Full: across nodes"): three nodes, each its
# own domain, started by hako-launch from federation.json:
#
#   srv-01  the conductor's server (the commit authority), the ExMonitor (hako-rd monitor)
#           and a bridge receiving the forklift's PDUs from whichever node runs it
#   cli-01  forklift-1 (the forklift's host for node 1), the controller, a bridge
#   cli-02  forklift-2 (the standby host, node 2), a bridge
#
# The bridges follow the EU (hako-bridge --rd): the controller on cli-01 and the ExMonitor on
# srv-01 see the forklift on whichever node owns it. After 20 s of world time the report
# checks continuity against a single-process run and the RD traces (hako-rd check).
#
# usage: run.sh [--boundary] [--relay HAKO_RELAY] [--ports BASE] [--name NAME] [--out DIR]
#   --boundary      the ExMonitor moves the EU at the x = 1 m boundary (margin v_max * 2 Dmax)
#                   instead of every 5 s of world time (timetable)
#   --relay EXE     the clients reach the server's conductor, and cli-02's bridge reaches
#                   cli-01's, through hako-relay (EXE, built with the tests): 2 ms + U[0, 2]
#                   ms each way
#   --ports BASE    the ports BASE..BASE+6 on 127.0.0.1 (default 54113)
#   --name NAME     the federation's name, which names the domains (default rdfull)
#   --out DIR       where the copy of the sample and its logs go (default ./run)
#   --lab EXE       each node in its own namespaces (hako-netlab EXE; root): own network,
#                   /dev/shm and pids, reaching the others by the lab's addresses only; one
#                   hako-launch per node, their lines prefixed with the node as a federation
#                   file does
# Exit status: hako-launch's (0 when every node ended well), 2 on a usage error.
set -u

BOUNDARY=0 RELAY='' BASE=54113 NAME=rdfull OUT=$PWD/run LAB=''
while [ $# -gt 0 ]; do
	case "$1" in
	--boundary) BOUNDARY=1; shift ;;
	--relay) RELAY=${2:?--relay needs the hako-relay program}; shift 2 ;;
	--ports) BASE=${2:?--ports needs a number}; shift 2 ;;
	--name) NAME=${2:?--name needs a name}; shift 2 ;;
	--out) OUT=${2:?--out needs a folder}; shift 2 ;;
	--lab) LAB=${2:?--lab needs the hako-netlab program}; shift 2 ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
case "$BASE" in '' | *[!0-9]*) echo "run.sh: --ports '$BASE': not a number" >&2; exit 2 ;; esac
[ "$BASE" -ge 1024 ] && [ "$BASE" -le 65000 ] || { echo "run.sh: --ports $BASE: 1024..65000" >&2; exit 2; }

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "$HERE/../.." && pwd)
LAUNCH=$BUILD/bin/hako-launch
[ -x "$LAUNCH" ] || { echo "run.sh: $LAUNCH not found: build first (make build)" >&2; exit 1; }

# A fresh copy: the ports, the programs' folders and the mode are written into it.
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
[ "$OUT" != "$HERE" ] || { echo "run.sh: --out must not be the sample's own folder" >&2; exit 2; }
rm -rf "${OUT:?}"/{srv-01,cli-01,cli-02,bridge,logs} "$OUT"/*.json
cp -r "$HERE"/{srv-01,cli-01,cli-02,bridge} "$HERE"/*.json "$OUT/" || exit 1
if [ "$BOUNDARY" = 1 ]; then
	cp "$HERE/forklift_rd_full_boundary.json" "$OUT/forklift_rd_full.json" || exit 1
fi
ctl=$BASE time=$((BASE + 1)) udp1=$((BASE + 2)) udp0=$((BASE + 3))
for f in "$OUT"/*/*.json; do
	sed -i -e "s/127.0.0.1:54113/127.0.0.1:$ctl/; s/127.0.0.1:54114/127.0.0.1:$time/" \
		-e "s/\"port\": 54115/\"port\": $udp1/; s/\"port\": 54116/\"port\": $udp0/" \
		-e "s|\"../../../bin\"|\"$BUILD/bin\"|" \
		-e "s|\"../../forklift\"|\"$BUILD/samples/forklift\"|" "$f"
done
sed -i "s/\"name\": \"rdfull\"/\"name\": \"$NAME\"/" "$OUT/federation.json"

RELAY_PID='' LAB_NAME=''
cleanup() {
	[ -z "$RELAY_PID" ] || kill "$RELAY_PID" 2>/dev/null
	[ -z "$RELAY_PID" ] || wait "$RELAY_PID" 2>/dev/null
	[ -z "$LAB_NAME" ] || "$LAB" down "$LAB_NAME" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -n "$RELAY" ]; then
	[ -x "$RELAY" ] || { echo "run.sh: --relay $RELAY: not a program" >&2; exit 2; }
	rctl=$((BASE + 4)) rtime=$((BASE + 5)) rudp=$((BASE + 6))
	"$RELAY" --tcp --listen "127.0.0.1:$rctl" --to "127.0.0.1:$ctl" \
		--listen "127.0.0.1:$rtime" --to "127.0.0.1:$time" \
		--udp --listen "127.0.0.1:$rudp" --to "127.0.0.1:$udp1" \
		--delay-ms 2 --jitter-ms 2 >"$OUT/relay.log" 2>&1 &
	RELAY_PID=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "ready" "$OUT/relay.log" && break
		kill -0 "$RELAY_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -q "ready" "$OUT/relay.log" || {
		echo "run.sh: hako-relay did not start: $(cat "$OUT/relay.log")" >&2
		exit 1
	}
	for f in "$OUT"/cli-0?/cli-0?.json; do
		sed -i -e "s/127.0.0.1:$ctl\"/127.0.0.1:$rctl\"/; s/127.0.0.1:$time\"/127.0.0.1:$rtime\"/" "$f"
	done
	sed -i "s/\"port\": $udp1/\"port\": $rudp/" "$OUT/bridge/cli02_udp_comm.json"
	echo "run.sh: the clients' conductors and cli-02's bridge go through hako-relay (2 ms + U[0, 2] ms)"
fi

if [ -n "$LAB" ]; then
	[ -z "$RELAY" ] || { echo "run.sh: --lab and --relay: one or the other" >&2; exit 2; }
	why=$("$LAB" probe 2>&1) || { echo "run.sh: no lab here: $why" >&2; exit 1; }
	# Every address of the sample is 127.0.0.1: the conductor's, the server's and cli-01's udp
	# ports become those nodes' lab addresses.
	sub=10.$((100 + $$ % 50)).$(($$ % 250))
	SRV=$sub.11 C1=$sub.12 C2=$sub.13
	for f in "$OUT"/*/*.json; do
		sed -i -e "s/127.0.0.1:$ctl\"/$SRV:$ctl\"/; s/127.0.0.1:$time\"/$SRV:$time\"/" "$f"
	done
	sed -i "s/127.0.0.1/$C1/" "$OUT/bridge/cli01_udp_comm.json" "$OUT/bridge/cli02_udp_comm.json"
	sed -i "s/127.0.0.1/$SRV/" "$OUT/bridge/srv01_udp_comm.json" \
		"$OUT/bridge/cli01_srv_udp_comm.json" "$OUT/bridge/cli02_srv_udp_comm.json"
	cat >"$OUT/lab.json" <<EOF
{"subnet": "$sub.0/24", "nodes": [{"name": "srv-01", "address": "$SRV"},
 {"name": "cli-01", "address": "$C1"}, {"name": "cli-02", "address": "$C2"}]}
EOF
	"$BUILD/bin/hako-conductor" keygen "$OUT"/srv-01/srv-01.json "$OUT"/cli-01/cli-01.json \
		"$OUT"/cli-02/cli-02.json >/dev/null || exit 1
	LAB_NAME=rdf-$$
	"$LAB" up "$OUT/lab.json" --name "$LAB_NAME" --while-pid $$ >"$OUT/lab.log" 2>&1 || {
		echo "run.sh: hako-netlab up: $(cat "$OUT/lab.log")" >&2
		exit 1
	}
	echo "run.sh: each node in its own namespaces (lab $LAB_NAME): srv-01 $SRV, cli-01 $C1, cli-02 $C2"
	# Each node's lines into a file, prefixed with the node once it ended: a pipe could stay
	# open after hako-launch ended (a process left in the node keeps it: the sanitizer build's
	# did, for minutes), and the lab's end takes what is left.
	pids=()
	for n in srv-01 cli-01 cli-02; do
		(cd "$OUT/$n" && exec "$LAB" exec "$LAB_NAME" "$n" -- env HAKO_DOMAIN="$NAME-$n" \
			"$LAUNCH" launch.json) >"$OUT/$n.out" 2>&1 &
		pids+=($!)
	done
	rc=0
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	for n in srv-01 cli-01 cli-02; do
		sed "s/^/[$n] /" "$OUT/$n.out"
	done
	if [ "$rc" -eq 0 ]; then
		echo "run.sh: done: every node of the federation ended well, each in its own namespaces"
	else
		echo "run.sh: FAILED: a node did not end well (logs in $OUT/logs)"
	fi
	exit "$rc"
fi

"$LAUNCH" "$OUT/federation.json"
