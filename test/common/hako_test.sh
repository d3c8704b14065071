# The shell test kit, sourced by the tests written in bash (test_hako_cmd*.sh, test_hako_rd.sh,
# test_msggen.sh, test_launch.sh, the endpoint's test_tool.sh, the samples' test_*.sh): checks
# that count failures in $fails and show what failed, waits, the domains and ports of a test.
# shellcheck shell=bash

fails=0

# fail MSG...: a check failed: say so and count it; the script goes on.
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# die MSG...: a check failed after which nothing more can be checked: count it and exit 1.
die() {
	fail "$@"
	exit 1
}

# finish NAME: the last line, "NAME: ok", or the count of failed checks and exit status 1.
finish() {
	if [ "$fails" -ne 0 ]; then
		echo "$1: $fails check(s) failed"
		exit 1
	fi
	echo "$1: ok"
}

# show FILE [LINES]: print FILE (its last LINES lines), indented, under a line naming it.
show() {
	if [ $# -gt 1 ]; then
		echo "---- $1 (last $2 lines)"
		tail -n "$2" "$1" | sed 's/^/    /'
	else
		echo "---- $1"
		sed 's/^/    /' "$1"
	fi
}

# expect RC CMD...: run CMD, keep its stdout+stderr in $out, check its exit status.
expect() {
	local want=$1
	shift
	out=$("$@" 2>&1)
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "FAIL: '$*' exited $rc, expected $want; its output:"
		echo "$out" | sed 's/^/    /'
		fails=$((fails + 1))
	fi
}

# has REGEX: the output of the last command matches REGEX (extended).
has() {
	[ $# -eq 1 ] || die "has takes one REGEX (for a file: file_has FILE REGEX): has $*"
	if ! grep -qE -- "$1" <<<"$out"; then
		echo "FAIL: the output of the last command lacks /$1/:"
		echo "$out" | sed 's/^/    /'
		fails=$((fails + 1))
	fi
}

# same LABEL GOT WANT: GOT is exactly WANT; else fail on LABEL and show both.
same() {
	[ $# -eq 3 ] || die "same takes LABEL GOT WANT: same $*"
	if [ "$2" != "$3" ]; then
		fail "$1:"
		echo "    got:  $2"
		echo "    want: $3"
	fi
}

# file_has FILE REGEX: a line of FILE matches REGEX (extended); else FILE is shown.
file_has() {
	[ $# -eq 2 ] || die "file_has takes FILE REGEX: file_has $*"
	if ! grep -qE -- "$2" "$1" 2>/dev/null; then
		fail "$1 lacks /$2/"
		if [ -e "$1" ]; then
			show "$1"
		else
			echo "    (there is no $1)"
		fi
	fi
}

# file_lacks FILE REGEX: no line of FILE matches REGEX (extended); else FILE is shown.
file_lacks() {
	[ $# -eq 2 ] || die "file_lacks takes FILE REGEX: file_lacks $*"
	if grep -qE -- "$2" "$1" 2>/dev/null; then
		fail "$1 has /$2/"
		show "$1"
	fi
}

# until_ok SECONDS CMD...: retry CMD every 50 ms until it succeeds.
until_ok() {
	local tries=$(($1 * 20)) i
	shift
	for ((i = 0; i < tries; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.05
	done
	echo "FAIL: '$*' did not succeed within the time limit"
	fails=$((fails + 1))
	return 1
}

# wait_for_line FILE REGEX SECONDS: wait until a line of FILE matches REGEX; else fail, show FILE
# and return 1.
wait_for_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "$1 never showed /$2/"
	show "$1"
	return 1
}

# alive PID: the process exists and is not a zombie (an orphan's zombie waits for init, which
# in a container may never reap it).
alive() {
	local state
	state=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# tree_pids, kill_tree: a process tree killed as a dead machine would be (shared with the show).
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/proc_tree.sh"

# launch_domains FILE...: the domains hako-launch named in its output: its own, each node's
# ("[node] hako-launch: domain 'D'") and those of the nodes it started.
launch_domains() {
	sed -n -e "s/^\(\[[^]]*\] \)\{0,1\}hako-launch: domain '\([^']*\)'.*/\2/p" \
		-e "s/^hako-launch: started node .*, domain '\([^']*\)'$/\1/p" "$@" 2>/dev/null | sort -u
}

# clean_domains HAKO_CMD DOMAIN...: remove what is left of each DOMAIN, quietly (for the EXIT
# trap: a test that failed half-way leaves no segment).
clean_domains() {
	local cmd=$1 d
	shift
	for d in "$@"; do
		"$cmd" -d "$d" clean --force >/dev/null 2>&1
	done
}

# segments_gone DOMAIN...: fail for each DOMAIN whose segment (/dev/shm/hako.DOMAIN) is left.
segments_gone() {
	local d
	for d in "$@"; do
		if [ -e "/dev/shm/hako.$d" ]; then
			fail "the segment of domain '$d' is left"
		fi
	done
}

# port_taken PORT: a tcp socket (listening or connected) has PORT as one of its ports.
port_taken() {
	grep -q "$(printf ':%04X ' "$1")" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_ports N: print the first of N consecutive free tcp ports in [20000, 32000), below the
# kernel's ephemeral range, spread by our pid so that parallel tests differ; 1 if none is found.
free_ports() {
	local n=$1 tries base p ok
	for ((tries = 0; tries < 200; tries++)); do
		base=$((20000 + (($$ * 7 + RANDOM + tries * 13) % (12000 / n)) * n))
		ok=1
		for ((p = base; p < base + n; p++)); do
			port_taken "$p" && ok=0
		done
		[ "$ok" = 1 ] && echo "$base" && return 0
	done
	return 1
}
