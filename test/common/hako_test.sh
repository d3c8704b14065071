# The shell test kit, sourced by the tests written in bash (test_hako_cmd*.sh, test_hako_rd.sh,
# test_msggen.sh): checks that count failures in $fails and show what failed.
# shellcheck shell=bash

fails=0

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
	if ! grep -qE -- "$1" <<<"$out"; then
		echo "FAIL: the output of the last command lacks /$1/:"
		echo "$out" | sed 's/^/    /'
		fails=$((fails + 1))
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
