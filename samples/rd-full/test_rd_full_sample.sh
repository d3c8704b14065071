#!/bin/bash
# samples.rd_full: the RD-Full demo copied into a temporary folder, its conductor files moved to
# free ports and its programs found in the build tree, run by hako-launch from its federation
# file. Checks: every node ended well; the ExMonitor committed three moves (5, 10, 15 s); the
# report found three hand-offs, exact continuity against the single-process run and a clean
# hako-rd check; the bridges followed the EU, so the controller on cli-01 saw the forklift
# while cli-02 ran it; no process or domain segment is left.
#
# usage: test_rd_full_sample.sh SAMPLE_BUILD_DIR HAKO_LAUNCH HAKO_CMD
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

SAMPLE=$(cd "$1" && pwd)
LAUNCH=$2
HAKO_CMD=$3
FORKLIFT_DIR=$(cd "$SAMPLE/../forklift" && pwd)
RD_DIR=$(cd "$SAMPLE/../../rd/tools" && pwd)
BRIDGE_DIR=$(cd "$SAMPLE/../../pdu-bridge" && pwd)

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
	base=$(free_ports 3) || die "no free ports"
	rm -rf run
	cp -r "$SAMPLE" run || die "cannot copy $SAMPLE"
	rm -rf run/logs
	for f in run/*/*.json; do
		sed -i -e "s/127.0.0.1:54113/127.0.0.1:$base/; s/127.0.0.1:54114/127.0.0.1:$((base + 1))/" \
			-e "s/\"port\": 54115/\"port\": $((base + 2))/" \
			-e "s|\"../../../rd/tools\"|\"$RD_DIR\"|; s|\"../../forklift\"|\"$FORKLIFT_DIR\"|" \
			-e "s|\"../../../pdu-bridge\"|\"$BRIDGE_DIR\"|" "$f"
	done
	sed -i "s/\"name\": \"rdfull\"/\"name\": \"rdfull$$\"/" run/federation.json
	timeout -s KILL 150 "$LAUNCH" run/federation.json >"out-$attempt.txt" 2>&1
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
[ "$last" = "hako-launch: done: every node of the federation ended well; logs in logs/federation" ] ||
	fail "last line: $last"
for t in 5 10 15; do
	grep -qE "^\[srv-01\] \[exmonitor\] t=$t\.000 s  EU forklift: node . \(cli-0.\) -> node . \(cli-0.\), epoch $((t / 5)), commit point" "$log" ||
		fail "no move committed at t=$t s"
done
grep -q "monitor: 3 moves committed, 0 refused" "$log" || fail "the ExMonitor's summary"
grep -qE "\[report\]   hand-offs      3 \(1 -> 2: 2, 2 -> 1: 1\), 0 reclaims" "$log" ||
	fail "not three hand-offs"
grep -qE "\[report\]   continuity     exact: ([0-9]+) of \1 steps identical" "$log" ||
	fail "continuity is not exact"
grep -qE "\[report\]   hako-rd check  ok: .* 3 hand-offs, 0 violations" "$log" ||
	fail "hako-rd check did not pass"
[ -s run/logs/rd-full/forklift-x.svg ] || fail "no plot"
# The bridges follow the EU: the controller on cli-01 sees the forklift while cli-02 runs it.
for t in 7 8 9 17 18 19; do
	grep -qE "^\[cli-01\] \[controller\] t= *$t\.000 s  owner forklift-2   epoch $(((t - 2) / 5))   x= " "$log" ||
		fail "the controller did not see the forklift on cli-02 at t=$t s"
done
grep -qE "^\[cli-02\] \[bridge\] hako-bridge: connection forklift_to_cli01: forwarded=[1-9]" "$log" ||
	fail "cli-02's bridge forwarded nothing"
grep -qE "^\[cli-02\] \[bridge\] hako-bridge: connection forklift_to_cli01 follows EU forklift: epoch=3 active=1 changes=[0-9]+ " "$log" ||
	fail "cli-02's bridge did not follow the three hand-offs"
grep -qE "^\[cli-01\] \[bridge\] hako-bridge: connection forklift_from_cli02 follows EU forklift: epoch=3 active=1" "$log" ||
	fail "cli-01's bridge did not follow the EU to epoch 3"

mapfile -t doms < <(launch_domains "$log")
segments_gone "${doms[@]}"
[ "${#doms[@]}" -eq 3 ] || fail "${#doms[@]} domains in the output, expected 3"
for pid in $(sed -n 's/.*(pid \([0-9]*\)[,)].*/\1/p' "$log" | sort -u); do
	alive "$pid" && fail "process $pid is still alive"
done

if [ "$fails" -ne 0 ]; then
	show "$log"
else
	grep -E "\[exmonitor\]|\[report\]" "$log"
fi
finish samples.rd_full
