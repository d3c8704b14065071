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
# Exit status: hako-launch's (0 when every node ended well), 2 on a usage error.
set -u

BOUNDARY=0 RELAY='' BASE=54113 NAME=rdfull OUT=$PWD/run
while [ $# -gt 0 ]; do
	case "$1" in
	--boundary) BOUNDARY=1; shift ;;
	--relay) RELAY=${2:?--relay needs the hako-relay program}; shift 2 ;;
	--ports) BASE=${2:?--ports needs a number}; shift 2 ;;
	--name) NAME=${2:?--name needs a name}; shift 2 ;;
	--out) OUT=${2:?--out needs a folder}; shift 2 ;;
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

RELAY_PID=''
cleanup() {
	[ -z "$RELAY_PID" ] || kill "$RELAY_PID" 2>/dev/null
	[ -z "$RELAY_PID" ] || wait "$RELAY_PID" 2>/dev/null
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

"$LAUNCH" "$OUT/federation.json"
