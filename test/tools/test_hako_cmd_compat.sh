#!/bin/bash
# tools.hako_cmd_compat: the commands hako-cmd has from Hakoniwa's (real_cid, dump, restore,
# pmeta, jmeta, plog) against a real conductor and the hello assets, after one run; and a PDU
# written the way Hakoniwa's Python library writes it (heap offset not a multiple of 8).
#
# usage: test_hako_cmd_compat.sh HAKO_CMD HELLO_WRITER HELLO_READER HELLO_PDUDEF
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

HAKO_CMD=$1
WRITER=$2
READER=$3
PDUDEF=$4

export HAKO_DOMAIN="hakocmd-compat-$$"
unset HAKO_PDUDEF HAKO_CORE_CONFIG HAKO_LOG
tmp=$(mktemp -d)
fails=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	"$HAKO_CMD" clean --force >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

hako() {
	"$HAKO_CMD" "$@"
}

both_registered() {
	local o
	o=$(hako ls) && grep -q '^writer ' <<<"$o" && grep -q '^reader ' <<<"$o"
}

D=$HAKO_DOMAIN

# ---- a conductor, the two hello assets, one run ----
"$HAKO_CMD" conductor -q --real-time-factor 1 >"$tmp/conductor.out" 2>&1 &
cpid=$!
pids+=("$cpid")
until_ok 5 hako status || exit 1
"$WRITER" "$PDUDEF" >"$tmp/writer.out" 2>&1 &
wpid=$!
"$READER" "$PDUDEF" >"$tmp/reader.out" 2>&1 &
rpid=$!
pids+=("$wpid" "$rpid")
until_ok 5 both_registered || {
	cat "$tmp/writer.out" "$tmp/reader.out"
	exit 1
}
expect 0 hako start
expect 0 hako stop
expect 0 hako pdu-write --type std_msgs/UInt64 Robot 0 '{"data": 42}'

# ---- Hakoniwa's real_cid, dump, restore, pmeta, jmeta, plog ----
expect 0 hako real_cid Robot 0
has '^0$'
expect 1 hako real_cid Robot 9
has '^-1$'
has "domain '$D' has no channel Robot/9"
expect 2 hako real_cid Robot
has 'need <robot> and <channel-id>'
expect 0 hako dump 0 -o "$tmp/ch0.bin"
if [ "$(wc -c <"$tmp/ch0.bin")" -ne 32 ] ||
	[ "$(od -An -tx1 -j24 -N1 "$tmp/ch0.bin" | tr -d ' ')" != "2a" ]; then
	echo "FAIL: dump 0 does not give the 32 bytes of the PDU pdu-write wrote"
	fails=$((fails + 1))
fi
expect 0 hako dump -o "$tmp/snap.bin"
has "^domain '$D': 1 channel \(32 B of PDUs\) written to $tmp/snap.bin$"
expect 0 hako pdu-write --type std_msgs/UInt64 Robot 0 '{"data": 7}'
expect 0 hako restore "$tmp/snap.bin"
has "^domain '$D': 1 channel restored from $tmp/snap.bin$"
expect 0 hako pdu --type std_msgs/UInt64 --json Robot 0
has '"data": 42'
expect 0 hako pdu-write --type std_msgs/UInt64 Robot 0 '{"data": 7}'
expect 0 hako restore 0 "$tmp/ch0.bin"
has "^Robot/0 \(real id 0\): wrote 32 of 32 bytes from $tmp/ch0.bin \(seq [1-9][0-9]*\)$"
expect 0 hako pdu --type std_msgs/UInt64 --json Robot 0
has '"data": 42'
expect 1 hako restore 7 "$tmp/ch0.bin"
has "domain '$D' has no channel of real id 7"
expect 1 hako restore "$tmp/ch0.bin"
has 'not a dump of hako-cmd dump'
head -c 60 "$tmp/snap.bin" >"$tmp/short.bin"
expect 1 hako restore "$tmp/short.bin"
has 'short.bin: cut short at byte 45 \(in a PDU\): not a whole hako-cmd dump$'
head -c 30 "$tmp/snap.bin" >"$tmp/short.bin"
expect 1 hako restore "$tmp/short.bin"
has 'short.bin: counts 1 channels, more than its 30 bytes can hold$'
expect 2 hako restore
has 'need <file>'
# A PDU as Hakoniwa's Python library writes it: the heap right after the 4-byte base (offset 28,
# not a multiple of 8), decoded all the same.
printf '\x78\x56\x34\x12\x01\0\0\0\x18\0\0\0\x1c\0\0\0\x1c\0\0\0\0\0\0\0\x01\0\0\0' >"$tmp/bool.bin"
expect 0 hako restore 0 "$tmp/bool.bin"
has 'wrote 28 of 32 bytes'
expect 0 hako pdu --type std_msgs/Bool Robot 0
has '^meta: version 1, base offset 24, heap offset 28, total size 28'
has '^  "data": true$'
expect 0 hako pmeta
has "^master_pid = $cpid$"
has '^state = 0 \(stopped\)$'
has '^time_usec.delta = 1000$'
has '^asset_num = 2$'
has '^assets\[[01]\]\.name = writer$'
has '^pdu_meta_data\.channel_map\[0\]\.robo_name = Robot$'
has '^pdu_meta_data\.channel\[0\]\.size = 32$'
expect 0 hako jmeta
has "\"master_pid\": $cpid,"
has '"robo_name": "Robot",'
has '"logical_channel_id": 0'
if command -v python3 >/dev/null && ! python3 -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$out"; then
	echo "FAIL: jmeta is not valid JSON"
	fails=$((fails + 1))
fi
expect 0 hako plog
has ' pid +[0-9]+ +domain created: 64 assets, 4096 channels'
has "asset 'writer' registered \(pid $wpid"
has 'channel Robot/0 created: 32 bytes, real id 0'
has 'world 0\.000000 s .*stopped -> runnable$'
has 'running -> stopping$'

expect 0 hako reset
for p in "$wpid" "$rpid"; do
	if ! wait "$p"; then
		echo "FAIL: asset process $p exited non-zero"
		cat "$tmp/writer.out" "$tmp/reader.out"
		fails=$((fails + 1))
	fi
done
expect 0 hako plog
has "asset 'writer' \\(pid $wpid\\) unregistered"
has 'stopped -> resetting$'

if [ "$fails" -ne 0 ]; then
	echo "tools.hako_cmd_compat: $fails check(s) failed"
	exit 1
fi
echo "tools.hako_cmd_compat: all checks passed"
