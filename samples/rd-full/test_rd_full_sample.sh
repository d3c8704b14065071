#!/bin/bash
# samples.rd_full*: the RD-Full demo run by its own run.sh on free ports, in a temporary folder.
# Checks: every node ended well; the ExMonitor committed its moves (timetable: at 5, 10 and
# 15 s; boundary: at x = 1 m, each way); the report found those hand-offs, exact continuity
# against the single-process run and a clean hako-rd check; the bridges followed the EU, so the
# controller on cli-01 saw the forklift while cli-02 ran it, and the report has their
# statistics; no process or domain segment is left.
#
# usage: test_rd_full_sample.sh SAMPLE_BUILD_DIR HAKO_CMD timetable|boundary|relay|lab [TOOL]
#   relay: the timetable mode with the clients' conductors and a bridge behind hako-relay (TOOL)
#   lab: the timetable mode with each node in its own namespaces (hako-netlab TOOL; skipped,
#        exit 77, where a lab cannot be made): the nodes reach each other by address only
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

SAMPLE=$(cd "$1" && pwd)
HAKO_CMD=$2
MODE=$3
RELAY=${4:-}
case "$MODE" in
timetable) args=() ;;
boundary) args=(--boundary) ;;
relay) args=(--relay "$RELAY") ;;
lab)
	args=(--lab "$RELAY")
	if ! why=$("$RELAY" probe 2>&1); then
		echo "SKIP: $why"
		exit 77
	fi
	;;
*) echo "usage: $0 SAMPLE_BUILD_DIR HAKO_CMD timetable|boundary|relay|lab [TOOL]" >&2; exit 2 ;;
esac

unset HAKO_DOMAIN HAKO_LOG NO_COLOR
tmp=$(mktemp -d) || exit 1
cd "$tmp" || exit 1

cleanup() {
	local ds
	mapfile -t ds < <(launch_domains out*.txt)
	clean_domains "$HAKO_CMD" "${ds[@]}"
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

rc=1
for attempt in 1 2 3; do
	base=$(free_ports 7) || die "no free ports"
	log="out-$attempt.txt"
	timeout -s KILL 150 "$SAMPLE/run.sh" "${args[@]}" --ports "$base" --name "rdf$$" \
		--out "$tmp/run" >"$log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && grep -qiE "address already in use|cannot listen" "$log"; then
		echo "ports from $base were taken meanwhile; again with others"
		continue
	fi
	break
done

[ "$rc" -eq 0 ] || fail "run.sh exited $rc"
last=$(tail -n 1 "$log")
if [ "$MODE" = lab ]; then
	[ "$last" = "run.sh: done: every node of the federation ended well, each in its own namespaces" ] ||
		fail "last line: $last"
else
	[ "$last" = "hako-launch: done: every node of the federation ended well; logs in logs/federation" ] ||
		fail "last line: $last"
fi
if [ "$MODE" = boundary ]; then
	# The forklift drives 0 -> 2 m and back twice in 20 s: four crossings of x = 1 m.
	n=$(grep -cE "^\[srv-01\] \[exmonitor\] t=[0-9.]+ s  EU forklift at x=(0\.9[89]|1\.0[01])[0-9]* .*: node . \(cli-0.\) -> node . \(cli-0.\), epoch [1-4], commit point" "$log")
	[ "$n" -eq 4 ] || fail "$n moves at the boundary, expected 4"
	grep -q "monitor: 4 moves committed, 0 refused" "$log" || fail "the ExMonitor's summary"
	grep -qE "\[report\]   hand-offs      4 \(1 -> 2: 2, 2 -> 1: 2\), 0 reclaims" "$log" ||
		fail "not four hand-offs"
	grep -qE "\[report\]   hako-rd check  ok: .* 4 hand-offs, [1-9][0-9]* reads, 0 violations" "$log" ||
		fail "hako-rd check did not pass"
	# Each hand-off near the boundary: the new owner's first x within 5 cm of 1 m.
	n=$(grep -cE "\[forklift-.\] t=[0-9.]+ s  hand-off . -> .  epoch .  x=(0\.9[5-9]|1\.0[0-5])" "$log")
	[ "$n" -eq 4 ] || fail "$n hand-offs within 5 cm of the boundary, expected 4"
else
	for t in 5 10 15; do
		grep -qE "^\[srv-01\] \[exmonitor\] t=$t\.000 s  EU forklift: node . \(cli-0.\) -> node . \(cli-0.\), epoch $((t / 5)), commit point" "$log" ||
			fail "no move committed at t=$t s"
	done
	grep -q "monitor: 3 moves committed, 0 refused" "$log" || fail "the ExMonitor's summary"
	grep -qE "\[report\]   hand-offs      3 \(1 -> 2: 2, 2 -> 1: 1\), 0 reclaims" "$log" ||
		fail "not three hand-offs"
	grep -qE "\[report\]   hako-rd check  ok: .* 3 hand-offs, [1-9][0-9]* reads, 0 violations" "$log" ||
		fail "hako-rd check did not pass"
	# The bridges follow the EU: the controller on cli-01 sees the forklift while cli-02
	# runs it.
	for t in 7 8 9 17 18 19; do
		grep -qE "^\[cli-01\] \[controller\] t= *$t\.000 s  owner forklift-2   epoch $(((t - 2) / 5))   x= " "$log" ||
			fail "the controller did not see the forklift on cli-02 at t=$t s"
	done
fi
if [ "$MODE" = relay ]; then
	grep -q "run.sh: the clients' conductors and cli-02's bridge go through hako-relay" "$log" ||
		fail "not through the relay"
fi
grep -qE "\[report\]   continuity     exact: ([0-9]+) of \1 steps identical" "$log" ||
	fail "continuity is not exact"
[ -s run/logs/rd-full/forklift-x.svg ] || fail "no plot"
grep -qE "^\[srv-01\] \[report\]   bridges        [1-9][0-9]* PDUs forwarded; dropped as of an older epoch: cli-01 [0-9]+, cli-02 [0-9]+, srv-01 [0-9]+$" "$log" ||
	fail "the report has no statistics of the three bridges"
grep -qE "^\[cli-02\] \[bridge\] hako-bridge: connection forklift_cli02_out follows EU forklift: epoch=[34] active=. changes=[0-9]+ \(active while this node owns it\)$" "$log" ||
	fail "cli-02's bridge did not follow the EU to its last epoch"
grep -qE "^\[srv-01\] \[bridge\] hako-bridge: connection forklift_srv01_in: forwarded=[1-9]" "$log" ||
	fail "srv-01's bridge received nothing"

mapfile -t doms < <(launch_domains "$log")
segments_gone "${doms[@]}"
[ "${#doms[@]}" -eq 3 ] || fail "${#doms[@]} domains in the output, expected 3"
if [ "$MODE" = lab ]; then
	# Each node's domain was in its own /dev/shm, never the host's.
	grep -q "run.sh: each node in its own namespaces" "$log" || fail "not in the lab"
fi
# (In the lab the pids are the nodes' own, and the lab's end took every process with it.)
[ "$MODE" = lab ] ||
	for pid in $(sed -n 's/.*(pid \([0-9]*\)[,)].*/\1/p' "$log" | sort -u); do
		alive "$pid" && fail "process $pid is still alive"
	done

if [ "$fails" -ne 0 ]; then
	show "$log"
else
	grep -E "\[exmonitor\]|\[report\]" "$log"
fi
finish "samples.rd_full ($MODE)"
