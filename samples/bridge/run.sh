#!/usr/bin/env bash
# The bridge sample with one command (docs/samples-bridge.md). Two simulation domains on this
# machine stand for two nodes that share nothing but a tcp connection:
#
#   node A (node-a.json): bridge-writer publishes Robot/counter and Robot/sim_time every 1 ms;
#                         hako-bridge --node node_a forwards them from A's shm channels to a
#                         tcp client (counter: immediate, sim_time: throttle 100 ms)
#   node B (node-b.json): hako-bridge --node node_b receives on a tcp server and writes into B's
#                         shm channels; hello-reader reads the counter there, and
#                         hako-endpoint probe logs every PDU that arrives
#
# Node B starts first (its tcp server must listen), node A runs 3 s of simulated time, then node B
# is stopped and run.sh prints what B received and the bridges' statistics. Exit 0 when the
# counter arrived in order up to the writer's last value, 1 otherwise.
#
# usage: run.sh [--port N] [--out DIR]
#   --port N   node B's tcp port on 127.0.0.1 (default 54100; 0 = any free port, which run.sh
#              reads from node B's log and writes into node A's tcp client file)
#   --out DIR  folder for the copy of the sample's files and the logs (default ./bridge-sample)
set -u

PORT=54100
OUT=$PWD/bridge-sample
while [ $# -gt 0 ]; do
	case "$1" in
	--port) PORT=${2:?--port needs a number}; shift 2 ;;
	--out) OUT=${2:?--out needs a folder}; shift 2 ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
	esac
done
case "$PORT" in '' | *[!0-9]*) echo "run.sh: --port '$PORT': not a number" >&2; exit 2 ;; esac

say() { echo "run.sh: $*"; }
die() { echo "run.sh: FAILED: $*"; exit 1; }

# In the build tree the tools are in its bin/ and the samples in sibling folders; installed, they
# are on PATH.
HERE=$(cd "$(dirname "$0")" && pwd)
for d in "$HERE/../../bin" "$HERE/../hello" "$HERE"; do
	[ -d "$d" ] && PATH=$(cd "$d" && pwd):$PATH
done
export PATH
for tool in hako-launch hako-cmd hako-bridge hako-endpoint hello-reader bridge-writer; do
	command -v "$tool" >/dev/null ||
		die "$tool not found: build first (make build), then run build/samples/bridge/run.sh"
done

# A fresh copy of the launch and config files: the port is written into the copy.
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/config" "$OUT/logs" "$OUT"/*.fifo
cp -r "$HERE/config" "$HERE/node-a.json" "$HERE/node-b.json" "$OUT/" || die "cannot copy to $OUT"
sed -i "s/\"port\": [0-9]*/\"port\": $PORT/" "$OUT/config/b_tcp_comm.json"
LOG_A=$OUT/logs/node-a
LOG_B=$OUT/logs/node-b

DOM_A=bridge-a-$$
DOM_B=bridge-b-$$
A_PID='' B_PID='' A_SED='' B_SED=''

# Stop whatever still runs (by pid) and remove segments a killed conductor left behind.
cleanup() {
	local pid
	for pid in $A_PID $B_PID; do
		kill -TERM "$pid" 2>/dev/null
	done
	for _ in $(seq 100); do
		kill -0 $A_PID $B_PID 2>/dev/null || break
		sleep 0.1
	done
	for pid in $A_PID $B_PID; do
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	for d in "$DOM_A" "$DOM_B"; do
		[ -e "/dev/shm/hako.$d" ] && hako-cmd -d "$d" clean >/dev/null 2>&1
	done
	rm -f "$OUT"/*.fifo
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT
trap 'say "terminated"; exit 143' TERM

# start_node NAME LAUNCH_FILE DOMAIN: hako-launch in the background, its output prefixed with
# "node X | "; sets LAUNCH_PID and SED_PID.
start_node() {
	local fifo=$OUT/$1.fifo
	mkfifo "$fifo" || die "mkfifo $fifo"
	sed -u "s/^/node $1 | /" <"$fifo" &
	SED_PID=$!
	(cd "$OUT" && HAKO_DOMAIN=$3 exec hako-launch "$OUT/$2") >"$fifo" 2>&1 &
	LAUNCH_PID=$!
}

# wait_for_line FILE PATTERN SECONDS PID: until grep -E finds PATTERN in FILE; fails when PID
# exits first or the time runs out.
wait_for_line() {
	for _ in $(seq $(($3 * 20))); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

say "node A = domain '$DOM_A', node B = domain '$DOM_B'; files and logs in $OUT"

# ---- node B: its bridge must listen before node A's bridge connects ----
start_node B node-b.json "$DOM_B"
B_PID=$LAUNCH_PID B_SED=$SED_PID
if ! wait_for_line "$LOG_B/hako-launch.log" "simulation running" 20 "$B_PID"; then
	grep -qs "Address already in use" "$LOG_B/bridge-b.log" &&
		die "port $PORT is in use: pick another one with --port N (0 = any free port)"
	die "node B did not start its simulation (see $LOG_B)"
fi
BOUND=$(sed -n "s/.*endpoint 'b_tcp' bound to port \([0-9]*\).*/\1/p" "$LOG_B/bridge-b.log" | head -1)
[ -n "$BOUND" ] || die "no port in $LOG_B/bridge-b.log"
sed -i "s/\"port\": [0-9]*/\"port\": $BOUND/" "$OUT/config/a_tcp_comm.json"
say "node B runs; its bridge listens on 127.0.0.1:$BOUND; starting node A"

# ---- node A: 3 s of simulated time, then it stops by itself ----
start_node A node-a.json "$DOM_A"
A_PID=$LAUNCH_PID A_SED=$SED_PID
wait "$A_PID"
A_RC=$?
A_PID=
wait "$A_SED"

# ---- let the last PDUs reach node B, then stop it ----
LAST=$(sed -n 's/.*\[writer\] done: [0-9]* steps, last counter=\([0-9]*\).*/\1/p' \
	"$LOG_A/writer.log" 2>/dev/null | tail -1)
say "node A is done; stopping node B once the writer's last counter (${LAST:-?}) is there"
if [ -n "$LAST" ]; then
	wait_for_line "$LOG_B/probe.log" "\"pdu\":\"counter\".*\"data\":\\{\"data\":$LAST\\}" 10 "$B_PID" ||
		say "node B did not see counter $LAST within 10 s"
fi
hako-cmd -d "$DOM_B" stop >/dev/null || say "hako-cmd stop failed for domain '$DOM_B'"
wait "$B_PID"
B_RC=$?
B_PID=
wait "$B_SED"

# ---- what node B received ----
# probe.log: one JSON line per PDU, {"robot":"Robot","channel_id":0,"pdu":"counter",...,"data":{"data":N}}
summary() { # PDU: "n first last in_order(1/0) min_gap max_gap" of the values B's probe saw
	awk -v want="\"pdu\":\"$1\"" '
		index($0, want) && match($0, /"data":\{"data":[0-9]+/) {
			v = substr($0, RSTART + 15, RLENGTH - 15) + 0
			if (n == 0) first = v
			else {
				if (v <= prev) bad = 1
				gap = v - prev
				if (n == 1 || gap < mingap) mingap = gap
				if (n == 1 || gap > maxgap) maxgap = gap
			}
			prev = v; n++
		}
		END { printf "%d %d %d %d %d %d\n", n, first, prev, !bad, mingap, maxgap }
	' "$LOG_B/probe.log" 2>/dev/null
}
read -r CN CFIRST CLAST CORDER _ _ <<<"$(summary counter)"
read -r TN TFIRST TLAST TORDER TMIN TMAX <<<"$(summary sim_time)"
sec() { awk -v u="$1" 'BEGIN { printf "%.3f", u / 1e6 }'; }

A_COUNTER=$(sed -n 's/^hako-bridge: connection a_counter: forwarded=\([0-9]*\).*/\1/p' \
	"$LOG_A/bridge-a.log" 2>/dev/null | tail -1)

echo
echo "==== what node B received (hako-endpoint probe on node B's shm channels) ===="
if [ "${CN:-0}" -gt 0 ]; then
	echo "  Robot/counter   (immediate)       $CN values, $CFIRST .. $CLAST, $([ "$CORDER" = 1 ] && echo "in order" || echo "OUT OF ORDER"); node A's writer wrote 1 .. ${LAST:-?}"
	if [ -n "$LAST" ] && [ "$CN" != "$LAST" ]; then
		echo "                                    (the rest were overwritten before anyone looked: a channel"
		echo "                                    keeps the latest value; node A's bridge read ${A_COUNTER:-?} of A's $LAST"
		echo "                                    writes, the probe $CN of what node B's bridge wrote)"
	fi
else
	echo "  Robot/counter   (immediate)       nothing arrived"
fi
if [ "${TN:-0}" -gt 0 ]; then
	echo "  Robot/sim_time  (throttle 100 ms) $TN values, $(sec "$TFIRST") s .. $(sec "$TLAST") s of node A's world time, $([ "$TORDER" = 1 ] && echo "in order" || echo "OUT OF ORDER"),"
	echo "                                    $(sec "$TMIN") to $(sec "$TMAX") s apart (node A's writer wrote one every 0.001 s)"
else
	echo "  Robot/sim_time  (throttle 100 ms) nothing arrived"
fi
READER=$(sed -n 's/.*\[reader\] done: \(.*\)/\1/p' "$LOG_B/reader.log" 2>/dev/null | tail -1)
echo "  hello-reader on node B            ${READER:-no summary (see $LOG_B/reader.log)}"
echo "  every PDU the probe saw, as JSON  $LOG_B/probe.log"

echo
echo "==== bridge statistics (each hako-bridge prints them when it exits) ===="
for n in A B; do
	lower=$(echo "$n" | tr AB ab)
	grep -h "^hako-bridge: connection" "$OUT/logs/node-$lower/bridge-$lower.log" 2>/dev/null |
		sed "s/^hako-bridge: /  node $n  /"
done
FWD_ZERO=$(grep -h "^hako-bridge: connection" "$LOG_A/bridge-a.log" "$LOG_B/bridge-b.log" 2>/dev/null |
	grep -c " forwarded=0 ")
N_STATS=$(grep -h "^hako-bridge: connection" "$LOG_A/bridge-a.log" "$LOG_B/bridge-b.log" 2>/dev/null | wc -l)
echo

# ---- verdict ----
problems=()
[ "$A_RC" -eq 0 ] || problems+=("node A's hako-launch exited with $A_RC (see $LOG_A)")
[ "$B_RC" -eq 0 ] || problems+=("node B's hako-launch exited with $B_RC (see $LOG_B)")
if [ "${CN:-0}" -eq 0 ]; then
	problems+=("no counter reached node B")
else
	[ "$CORDER" = 1 ] || problems+=("the counter arrived out of order")
	[ -n "$LAST" ] && [ "$CLAST" = "$LAST" ] ||
		problems+=("node B's last counter is $CLAST, node A's writer's ${LAST:-unknown}")
fi
if [ "${TN:-0}" -eq 0 ]; then
	problems+=("no sim_time reached node B")
elif [ "$TORDER" != 1 ]; then
	problems+=("sim_time arrived out of order")
fi
[ "$N_STATS" -eq 3 ] && [ "$FWD_ZERO" -eq 0 ] ||
	problems+=("expected 3 bridge connections with forwarded > 0, got $N_STATS lines, $FWD_ZERO at 0")
if [ ${#problems[@]} -gt 0 ]; then
	for p in "${problems[@]}"; do
		echo "run.sh: FAILED: $p"
	done
	exit 1
fi
say "OK: the counter crossed from node A to node B over tcp, in order, up to $LAST ($CN values seen on B); logs in $OUT/logs"
exit 0
