#!/usr/bin/env bash
# ctest samples.bridge: run the bridge sample on a free port and check what it prints.
# usage: test_bridge_sample.sh RUN_SH OUT_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"
RUN=$1
OUT=$2

rm -rf "$OUT"
mkdir -p "$OUT"
"$RUN" --port 0 --out "$OUT" >"$OUT/run.out" 2>&1
rc=$?
cat "$OUT/run.out"
[ "$rc" -eq 0 ] || die "run.sh exited with $rc"
grep -q "^run.sh: OK: " "$OUT/run.out" || fail "no OK line"

# The counter arrived in order, up to the writer's last value.
line=$(grep "Robot/counter " "$OUT/run.out") || die "no counter line"
echo "$line" | grep -qE "[1-9][0-9]* values, [0-9]+ \.\. ([0-9]+), in order; node A's writer wrote 1 \.\. [0-9]+" ||
	die "counter line: $line"
last_b=$(echo "$line" | sed -E 's/.* \.\. ([0-9]+), in order.*/\1/')
last_a=$(echo "$line" | sed -E 's/.*wrote 1 \.\. ([0-9]+).*/\1/')
[ "$last_b" = "$last_a" ] || fail "node B's last counter $last_b, node A's $last_a"
[ "$last_a" -eq 3000 ] || fail "node A's writer wrote $last_a values, expected 3000 (3 s of 1 ms steps)"
grep -qE "Robot/sim_time .* [1-9][0-9]* values, .* in order" "$OUT/run.out" || fail "sim_time line"

# Three connections, each forwarded something; the throttle dropped most sim_time values; the
# bridge of node B forwarded what node A's bridge sent.
stat() { grep "node $1  connection $2:" "$OUT/run.out" | sed -E "s/.* $3=([0-9]+).*/\1/"; }
for c in "A a_counter" "A a_sim_time" "B b_from_a"; do
	set -- $c
	f=$(stat "$1" "$2" forwarded)
	[ -n "$f" ] && [ "$f" -gt 0 ] || die "node $1 connection $2: forwarded='$f'"
	[ "$(stat "$1" "$2" send_failed)" = 0 ] || fail "node $1 connection $2: send failures"
done
a_sent=$(($(stat A a_counter forwarded) + $(stat A a_sim_time forwarded)))
[ "$(stat B b_from_a forwarded)" -eq "$a_sent" ] ||
	fail "node B's bridge forwarded $(stat B b_from_a forwarded), node A's sent $a_sent"
[ "$(stat A a_sim_time dropped_policy)" -gt 0 ] || fail "the throttle dropped nothing"
t=$(stat A a_sim_time forwarded)
[ "$t" -ge 20 ] && [ "$t" -le 40 ] || fail "the 100 ms throttle forwarded $t sim_time values in 3 s"

# Nothing left behind: no segment of the run's two domains, no process of this run.
read -r -a doms <<<"$(sed -n "s/^run.sh: node A = domain '\([^']*\)', node B = domain '\([^']*\)'.*/\1 \2/p" "$OUT/run.out")"
[ "${#doms[@]}" -gt 0 ] || fail "no domain names in the output"
segments_gone "${doms[@]}"
pgrep -f "$OUT/" >/dev/null && fail "processes of this run left behind"
finish samples.bridge
