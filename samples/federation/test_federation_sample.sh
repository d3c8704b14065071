#!/bin/bash
# samples.federation: the federation sample, generated again by hako-conductor gen into a
# temporary folder on free ports below the kernel's ephemeral range (no port another test got
# from the kernel can be one of them), run by hako-launch from its federation file. Checks the
# exit status and last line, that PDUs crossed every link both ways, that each node's drift
# table stays within Dmax, and that no process or domain segment is left.
#
# usage: test_federation_sample.sh HAKO_CONDUCTOR HAKO_LAUNCH HAKO_CMD EU_INPUT BRIDGE_DIR \
#        COUNTER_DIR
set -u

GEN=$1
LAUNCH=$2
HAKO_CMD=$3
INPUT=$4
BRIDGE_DIR=$5
COUNTER_DIR=$6
DMAX=10000 # conductor_defaults.max_delay_time_usec of eu-input.json

unset HAKO_DOMAIN HAKO_LOG NO_COLOR
tmp=$(mktemp -d) || exit 1
cd "$tmp" || exit 1
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# The domains the nodes ran in (from the federation's "started node" lines).
domains() {
	sed -n "s/^hako-launch: started node .*, domain '\([^']*\)'$/\1/p" out*.txt 2>/dev/null
}

cleanup() {
	for d in $(domains); do
		if [ -e "/dev/shm/hako.$d" ]; then
			"$HAKO_CMD" -d "$d" clean --force >/dev/null 2>&1
		fi
	done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# A port is taken when any socket (listening or connected) has it as its local port.
port_taken() {
	local hex
	hex=$(printf ':%04X ' "$1")
	grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# A base port with the 4 ports of the federation free (2 links, the conductor's 2), in
# [20000, 32000): below the ephemeral range, spread by our pid so that parallel runs differ.
pick_base() {
	local tries base p ok
	for ((tries = 0; tries < 200; tries++)); do
		base=$((20000 + (($$ * 7 + RANDOM + tries * 13) % 3000) * 4))
		ok=1
		for ((p = base; p < base + 4; p++)); do
			port_taken "$p" && ok=0
		done
		[ "$ok" = 1 ] && echo "$base" && return 0
	done
	return 1
}

# Generate and run; a port taken between the pick and the bind (another process of the machine)
# is retried with another base, anything else is the result.
rc=1
for attempt in 1 2 3; do
	base=$(pick_base) || { fail "no free ports"; exit 1; }
	rm -rf gen
	if ! "$GEN" gen -q -o gen --base-port "$base" --stop-at-usec 5000000 \
		--real-time-factor 1 --path "$BRIDGE_DIR" --path "$COUNTER_DIR" "$INPUT" \
		>"out-gen-$attempt.txt" 2>&1; then
		fail "hako-conductor gen failed"
		cat "out-gen-$attempt.txt"
		exit 1
	fi
	timeout -s KILL 100 "$LAUNCH" gen/federation.json >"out-$attempt.txt" 2>&1
	rc=$?
	out="out-$attempt.txt"
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$out"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done

show() {
	echo "---- $out"
	sed 's/^/    /' "$out"
}

[ "$rc" -eq 0 ] || fail "hako-launch exited $rc"
last=$(tail -n 1 "$out")
case $last in
"hako-launch: done: every node of the federation ended well; logs in logs/federation") ;;
*) fail "last line: $last" ;;
esac
grep -q "^\[srv-01\] hako-launch: stop time reached: the simulation stopped at world time 5.000 s$" \
	"$out" || fail "the server did not stop at 5.000 s"

# PDUs crossed every link, both ways: "received <robot>.counter: <n> updates" with n > 0.
for pair in srv-01:cli-01 srv-01:cli-02 cli-01:srv-01 cli-02:srv-01; do
	node=${pair%%:*}
	from=${pair#*:}
	n=$(sed -n "s/^\[$node\] \[counter-$node\] \[counter-$node\] received $from\.counter: \([0-9]*\) updates.*/\1/p" "$out")
	if [ -z "$n" ] || [ "$n" -eq 0 ]; then
		fail "$node received nothing from $from"
	fi
done

# Each node's drift table: a row per peer, drift_max <= Dmax. The server has two rows, each
# client one.
rows=0
for node in srv-01 cli-01 cli-02; do
	grep -q "^\[$node\] hako-launch: federation \(server\|client\) $node, world time" "$out" ||
		fail "no drift table from $node"
	while read -r peer state p50 p95 max age samples; do
		rows=$((rows + 1))
		if [ "$max" -gt "$DMAX" ] || [ "$samples" -eq 0 ]; then
			fail "$node against $peer: drift_max $max us (Dmax $DMAX), $samples samples"
		fi
	done < <(sed -n "s/^\[$node\] hako-launch:   \(\(srv\|cli\)-[0-9]*\) /\1 /p" "$out")
done
[ "$rows" -eq 4 ] || fail "$rows drift rows, expected 4"

# Nothing left behind.
for d in $(domains); do
	[ -e "/dev/shm/hako.$d" ] && fail "the segment of domain '$d' is left"
done
[ -n "$(domains)" ] || fail "no domain in the output: nothing was checked"
for pid in $(sed -n 's/.*(pid \([0-9]*\)[,)].*/\1/p' "$out" | sort -u); do
	if [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
		fail "process $pid is still alive"
	fi
done

if [ "$fails" -ne 0 ]; then
	show
	exit 1
fi
grep -E "received|hako-launch:   |federation (server|client)" "$out"
echo "OK: PDUs crossed every link, every drift within Dmax = $DMAX us"
