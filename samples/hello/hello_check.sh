#!/bin/sh
# hello-check: the "after" process of launch.json. It reads the last line each asset printed
# (hako-launch keeps every process's output in $HAKO_LAUNCH_LOG_DIR/<name>.log) and exits 1 unless
# the run did what lock-step promises: both assets took the same steps, the writer's counter is
# its step count, the reader's last counter is within one step of it (Dmax = delta), and the
# reader saw new data.
set -u
logs=${HAKO_LAUNCH_LOG_DIR:?hello-check runs under hako-launch (launch.json)}

# done_line NAME: the "[NAME] done: ..." line of that asset's log, numbers only.
done_line() {
	sed -n "s/^\[$1\] done: //p" "$logs/$1.log" 2>/dev/null | tail -n 1 | tr -cs '0-9' ' '
}

fail() {
	echo "FAILED: $*"
	exit 1
}

w=$(done_line writer)
r=$(done_line reader)
[ -n "$w" ] || fail "no result line from the writer in $logs/writer.log"
[ -n "$r" ] || fail "no result line from the reader in $logs/reader.log"
# writer: steps, last counter, write errors; reader: steps, last counter, new data, before the
# first write, read errors
set -- $w $r
w_steps=$1 w_last=$2 w_errors=$3 r_steps=$4 r_last=$5 r_new=$6 r_errors=$8

echo "writer  $w_steps steps, last counter $w_last"
echo "reader  $r_steps steps, last counter $r_last, new data on $r_new steps"
[ "$w_errors" -eq 0 ] && [ "$r_errors" -eq 0 ] || fail "$w_errors write and $r_errors read errors"
[ "$w_steps" -eq "$r_steps" ] || fail "the writer took $w_steps steps, the reader $r_steps"
[ "$w_last" -eq "$w_steps" ] || fail "the writer's last counter $w_last is not its step count"
diff=$((w_last - r_last))
[ "$diff" -ge -1 ] && [ "$diff" -le 1 ] ||
	fail "the reader's last counter $r_last is $diff away from the writer's $w_last"
[ "$r_new" -gt 0 ] || fail "the reader never saw new data"
echo "OK: the reader's last counter is ${diff#-} from the writer's (lock-step allows 1)"
