#!/bin/bash
# rd.tool: hako-rd validate / check / status, their output and exit codes; status against a
# real conductor started with hako-cmd.
#
# usage: test_hako_rd.sh HAKO_RD HAKO_CMD DATA_DIR
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

HAKO_RD=$1
HAKO_CMD=$2
DATA=$3

export HAKO_DOMAIN="hakord-test-$$"
unset HAKO_RD_CONFIG HAKO_PDUDEF HAKO_CORE_CONFIG HAKO_LOG
tmp=$(mktemp -d)
fails=0
cpid=

cleanup() {
	if [ -n "$cpid" ]; then
		kill -TERM "$cpid" 2>/dev/null
		wait "$cpid" 2>/dev/null
	fi
	"$HAKO_CMD" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

rd() {
	"$HAKO_RD" "$@"
}

# ---- usage ----
expect 2 rd
has 'usage: hako-rd \[-d NAME\] <command>'
expect 0 rd --help
has 'usage: hako-rd \[-d NAME\] <command>'
expect 0 rd help status
has '^usage: hako-rd status \[--config FILE\]'
expect 0 rd -V
has '^hako-rd [0-9]'
expect 2 rd frobnicate
has "unknown command 'frobnicate'"
expect 2 rd validate
has "hako-rd validate: needs one RD config file"
expect 2 rd check
expect 2 rd -v check "$DATA/rd.json"
has "unknown option '-v'"
expect 2 rd --bogus status
has "unknown option '--bogus'"

# ---- validate ----
expect 0 rd validate "$DATA/rd.json"
has 'rd.json: ok: 2 nodes, 1 execution units, trigger boundary, hand-off timeout 0.200 s'
has 'eu 0 forklift: robot forklift, initial owner 1 \(forklift-1\), candidates 1,2'
expect 0 rd validate -v "$DATA/rd.json"
has 'writes pos \(geometry_msgs/Twist, channel 1, 72 bytes\)'
cp "$DATA/pdudef.json" "$tmp/pdudef.json"
sed 's/"writes": \["pos", "height", "phase"\]/"writes": ["pos", "lift"]/' "$DATA/rd.json" >"$tmp/bad.json"
expect 1 rd validate "$tmp/bad.json"
has "bad.json:[0-9]+:[0-9]+: execution_units\[0\].writes\[1\]: \"lift\" is not a PDU of robot \"forklift\""
expect 1 rd validate "$tmp/none.json"
has 'none.json: cannot open'

# ---- check ----
cat >"$tmp/good.jsonl" <<'EOF'
{"t":0,"node":1,"eu":0,"epoch":0,"ev":"init","run":0,"hash":5,"role":"owner"}
{"t":1000,"node":1,"eu":0,"epoch":0,"ev":"step","step":1,"mt":1000}
{"t":1000,"node":1,"eu":0,"epoch":0,"ev":"write","pdu":"pos","mt":1000}
{"t":1000,"node":1,"eu":0,"epoch":1,"ev":"release","next":2,"step":1}
{"t":2000,"node":2,"eu":0,"epoch":1,"ev":"activate","from":1,"step":1}
{"t":2000,"node":2,"eu":0,"epoch":1,"ev":"step","step":2,"mt":2000}
{"t":2000,"node":2,"eu":0,"epoch":1,"ev":"write","pdu":"pos","mt":2000}
EOF
expect 0 rd check "$tmp/good.jsonl"
has 'hand-offs   1'
has 'violations  0'
has '^OK: one owner at a time'
{
	cat "$tmp/good.jsonl"
	echo '{"t":2000,"node":1,"eu":0,"epoch":0,"ev":"write","pdu":"pos","mt":2000}'
	echo '{"t":3000,"node":2,"eu":0,"epoch":1,"ev":"step","step":2,"mt":2000}'
} >"$tmp/bad.jsonl"
expect 1 rd check "$tmp/bad.jsonl"
has 'violations  3'
has 'FAIL: first violation: .*bad.jsonl:8: eu 0: nodes 2 and 1 both wrote "pos" at world time 2000 us'
expect 1 rd check -v "$tmp/bad.jsonl"
has 'model step 2 run twice'
has 'but node 2 owns the EU'
echo '{"t": 1, "node"' >"$tmp/broken.jsonl"
expect 1 rd check "$tmp/good.jsonl" "$tmp/broken.jsonl"
has 'broken.jsonl:1:'
expect 1 rd check "$tmp/missing.jsonl"
has 'missing.jsonl: cannot open'
# what is not a trace is an error, never "OK"
expect 1 rd check "$tmp"
has 'cannot read: is a directory'
expect 1 rd check /dev/zero
has '/dev/zero: cannot read: not a regular file or a pipe'
head -c 100000 /dev/zero >"$tmp/zeros.jsonl"
expect 1 rd check "$tmp/zeros.jsonl"
has 'zeros.jsonl:1: a NUL byte: not a trace'
head -c 70000 /dev/zero | tr '\0' 'x' >"$tmp/long.jsonl"
expect 1 rd check "$tmp/long.jsonl"
has 'long.jsonl:1: a record longer than 64 KiB: not a trace'

# ---- status ----
expect 1 rd status
has "domain $HAKO_DOMAIN: "
"$HAKO_CMD" conductor -q >"$tmp/conductor.out" 2>&1 &
cpid=$!
for ((i = 0; i < 100; i++)); do
	"$HAKO_CMD" status >/dev/null 2>&1 && break
	sleep 0.05
done
expect 0 rd status --config "$DATA/rd.json"
has "^domain $HAKO_DOMAIN: stopped, world time 0.000000 s"
has '^0 +forklift +stable +0 +1 \(forklift-1\) +-$'
expect 0 rd status
has '\(no status PDU written in this domain\)'
# a status written by hand: another config's hash, so the config view ignores it
expect 0 "$HAKO_CMD" pdu-write --type hako_msgs/ExecutionUnitRuntimeStatus forklift 4 \
	'{"config_hash": 7, "unit_count": 1, "status": [1], "epoch": [3], "curr_owner_node_id": [1], "next_owner_node_id": [2]}'
expect 0 rd status
has '^forklift/4 +releasing +3 +1 +2 +0x00000007$'
HAKO_RD_CONFIG="$DATA/rd.json" expect 0 rd status
has '^0 +forklift +stable +0 +1 \(forklift-1\) +-$'
timeout 1 "$HAKO_RD" status --config "$DATA/rd.json" --watch --interval 50 >"$tmp/watch.out" 2>&1
rc=$?
out=$(cat "$tmp/watch.out")
if [ "$rc" -ne 124 ] || [ "$(grep -cE '^0 +forklift' "$tmp/watch.out")" -lt 3 ]; then
	echo "FAIL: status --watch (rc $rc) did not redraw:"
	echo "$out" | head -20 | sed 's/^/    /'
	fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "all hako-rd checks passed"
