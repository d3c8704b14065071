# Process trees killed as a dead machine would kill them: sourced by the shell test kit
# (hako_test.sh) and by the drone show's loopback kill (samples/show/show.sh).
# shellcheck shell=bash

# tree_pids PID: PID and all its descendants, parents first.
tree_pids() {
	local c
	echo "$1"
	for c in $(pgrep -P "$1"); do tree_pids "$c"; done
}

# kill_tree PID: what a dead machine does to PID and everything under it. All are stopped first
# (listed again for children started meanwhile), so that none sees its parent die and ends
# cleanly (hako-launch's processes get SIGTERM when it dies); then killed children first: a
# parent killed first would leave its stopped children an orphaned process group, which the
# kernel wakes with SIGHUP and SIGCONT (hako-launch then stops cleanly and its node "leaves").
# Prints the pids.
kill_tree() {
	local pids
	pids=$(tree_pids "$1" | tr '\n' ' ')
	# shellcheck disable=SC2086
	kill -STOP $pids 2>/dev/null
	pids=$(tree_pids "$1" | tr '\n' ' ')
	# shellcheck disable=SC2086
	kill -STOP $pids 2>/dev/null
	# shellcheck disable=SC2046
	kill -KILL $(printf '%s\n' $pids | tac) 2>/dev/null
	echo "$pids"
}
