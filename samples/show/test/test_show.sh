#!/bin/bash
# samples.show: a smaller drone show. 128 drones on 4 client nodes and srv-01 (in a hako-netlab
# lab when root, each node its own namespaces; on loopback otherwise, and the output says
# which), RD-Full balanced by the fleet monitor, the whole mission (38 s of world time), cli-03
# killed whole at 5 s of world time. Checks (show.sh and its report): every formation reached,
# the surviving hosts end with all 128 drones, some of them restarted from the lost node, the
# final states are the bytes of one host in one process, hako-rd check clean, every node's
# conductor trace within Dmax; and that nothing of the run is left (no lab, no domain).
#
# usage: test_show.sh BUILD_DIR
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR
. "$here/../../../test/common/hako_test.sh"

build=$(cd "$1" && pwd)
dir=$(mktemp -d /tmp/test-show-XXXXXX) || exit 1
cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$dir"; }
trap cleanup EXIT

bash "$here/../show.sh" --build "$build" --drones 128 --nodes 4 --kill cli-03 \
	--kill-at-usec 5000000 --dmax-usec 20000 --viewer-port 0 --out "$dir/run" >"$dir/show.txt" 2>&1
rc=$?
head -n 1 "$dir/show.txt" # LAB or LOOPBACK, and why
[ "$rc" -eq 0 ] || {
	fail "show.sh exited with $rc"
	show "$dir/show.txt" 80
}
# shellcheck disable=SC2034 # read by has
out=$(cat "$dir/show.txt")
has "^show: (LAB|LOOPBACK)"
has "hako +at .*: 128 of 128 drones within 0.10 m"
has "circle +at .*: 128 of 128 drones within 0.10 m"
has "landed +at .*: 128 of 128 drones on the ground"
has "client cli-03 lost .*: dropped, the federation goes on"
has "take-over: cli-03's last world time .* carried on by the others [0-9]+ ms of world time after"
has "restarts +[1-9]"
has "violations +0"
has "128 drones: the same bytes"
has "show: every check held"
for id in srv-01 cli-01 cli-02 cli-03 cli-04; do
	has "^    $id: [0-9]+ samples, .*: ok$"
done
# Nothing left: the lab (its state folder) and the nodes' domains on this machine.
name=$(sed -n "s/.*lab '\(show-[0-9]*\)'.*/\1/p" "$dir/show.txt")
[ -z "$name" ] || [ ! -e "/run/hako-netlab/$name" ] || fail "lab $name is left"
[ -z "$name" ] || ! pgrep -f "hako-netlab.*$name" >/dev/null || fail "a process of lab $name is left"
dom=$(sed -n 's/.*domains \(show-[0-9]*\)-<node>.*/\1/p' "$dir/show.txt")
[ -n "$dom" ] || fail "show.sh did not name its domains"
for f in /dev/shm/hako."$dom"-*; do
	[ -e "$f" ] && fail "a domain of the show is left: $f"
done
[ "$fails" -ne 0 ] || grep -E "^show: (LAB|LOOPBACK)|take-over|the same bytes|every check" "$dir/show.txt"
finish samples.show
