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
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

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

# The domains the nodes ran in.
domains() {
	launch_domains out*.txt
}

cleanup() {
	local ds
	mapfile -t ds < <(domains)
	clean_domains "$HAKO_CMD" "${ds[@]}"
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# Generate and run, on a base port with the 4 ports of the federation free (2 links, the
# conductor's 2); a port taken between the pick and the bind (another process of the machine)
# is retried with another base, anything else is the result.
rc=1
for attempt in 1 2 3; do
	base=$(free_ports 4) || die "no free ports"
	rm -rf gen
	if ! "$GEN" gen -q -o gen --base-port "$base" --stop-at-usec 5000000 \
		--real-time-factor 1 --path "$BRIDGE_DIR" --path "$COUNTER_DIR" "$INPUT" \
		>"out-gen-$attempt.txt" 2>&1; then
		fail "hako-conductor gen failed"
		show "out-gen-$attempt.txt"
		exit 1
	fi
	timeout -s KILL 100 "$LAUNCH" gen/federation.json >"out-$attempt.txt" 2>&1
	rc=$?
	log="out-$attempt.txt"
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$log"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done

[ "$rc" -eq 0 ] || fail "hako-launch exited $rc"
last=$(tail -n 1 "$log")
case $last in
"hako-launch: done: every node of the federation ended well; logs in logs/federation") ;;
*) fail "last line: $last" ;;
esac
grep -q "^\[srv-01\] hako-launch: stop time reached: the simulation stopped at world time 5.000 s$" \
	"$log" || fail "the server did not stop at 5.000 s"

# PDUs crossed every link, both ways: "received <robot>.counter: <n> updates" with n > 0.
for pair in srv-01:cli-01 srv-01:cli-02 cli-01:srv-01 cli-02:srv-01; do
	node=${pair%%:*}
	from=${pair#*:}
	n=$(sed -n "s/^\[$node\] \[counter-$node\] \[counter-$node\] received $from\.counter: \([0-9]*\) updates.*/\1/p" "$log")
	if [ -z "$n" ] || [ "$n" -eq 0 ]; then
		fail "$node received nothing from $from"
	fi
done

# Each node's drift table: a row per peer, drift_max <= Dmax. The server has two rows, each
# client one.
rows=0
for node in srv-01 cli-01 cli-02; do
	grep -q "^\[$node\] hako-launch: federation \(server\|client\) $node, world time" "$log" ||
		fail "no drift table from $node"
	while read -r peer state p50 p95 max age samples; do
		rows=$((rows + 1))
		if [ "$max" -gt "$DMAX" ] || [ "$samples" -eq 0 ]; then
			fail "$node against $peer: drift_max $max us (Dmax $DMAX), $samples samples"
		fi
	done < <(sed -n "s/^\[$node\] hako-launch:   \(\(srv\|cli\)-[0-9]*\) /\1 /p" "$log")
done
[ "$rows" -eq 4 ] || fail "$rows drift rows, expected 4"

# Nothing left behind.
mapfile -t doms < <(domains)
segments_gone "${doms[@]}"
[ "${#doms[@]}" -gt 0 ] || fail "no domain in the output: nothing was checked"
for pid in $(sed -n 's/.*(pid \([0-9]*\)[,)].*/\1/p' "$log" | sort -u); do
	alive "$pid" && fail "process $pid is still alive"
done

if [ "$fails" -ne 0 ]; then
	show "$log"
else
	grep -E "received|hako-launch:   |federation (server|client)" "$log"
	echo "OK: PDUs crossed every link, every drift within Dmax = $DMAX us"
fi
finish samples.federation
