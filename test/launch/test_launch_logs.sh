#!/bin/bash
# launch.private_logs: the files hako-launch writes under its log folder are its user's alone
# (mode 0600, whatever the umask and whatever mode an earlier run's files had), so the viewer's
# control token, which hako-viewer prints and hako-launch repeats, is in no file another local
# user can read; the user who launched still finds the control URL in hako-launch.log. A link
# planted where a process's log goes is refused, not followed.
#
# usage: test_launch_logs.sh HAKO_LAUNCH TEST_ASSET HAKO_CMD
set -u
# shellcheck source-path=SCRIPTDIR
. "$(dirname "${BASH_SOURCE[0]}")/../../test/common/hako_test.sh"

LAUNCH=$1
ASSET_DIR=$(cd "$(dirname "$2")" && pwd -P)
HAKO_CMD=$3

unset HAKO_DOMAIN HAKO_CORE_CONFIG HAKO_LOG NO_COLOR HAKO_VIEWER_TOKEN
tmp=$(mktemp -d) || exit 1
cd "$tmp" || exit 1

cleanup() {
	local p ds
	sed -n 's/^pid=\([0-9]*\)$/\1/p' logs/*/*.log 2>/dev/null | while read -r p; do
		kill -KILL "$p" 2>/dev/null
	done
	mapfile -t ds < <(launch_domains out*.txt)
	clean_domains "$HAKO_CMD" "${ds[@]}"
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

# The umask most users have: before the fix, the logs came out 0644.
umask 022

asset() { # asset NAME: a process entry of launch-test-asset registering NAME
	echo "{\"name\": \"$1\", \"command\": \"launch-test-asset\", \"args\": [\"--asset\", \"$1\"], \"wait_for\": {\"asset\": \"$1\"}}"
}

cat >priv.json <<EOF
{
  "conductor": {"stop_at_usec": 300000},
  "log_dir": "logs/priv",
  "viewer": {"port": 0},
  "processes": [$(asset a)]
}
EOF
# What an earlier run (of an older hako-launch) left: readable by all.
mkdir -p logs/priv
for f in viewer a hako-launch; do
	echo old >"logs/priv/$f.log"
	chmod 0644 "logs/priv/$f.log"
done

timeout -s KILL 60 "$LAUNCH" --path "$ASSET_DIR" priv.json >out-priv.txt 2>&1
rc=$?
[ "$rc" -eq 0 ] || { fail "hako-launch exited $rc, expected 0"; show out-priv.txt; }
url_re='^hako-launch: viewer: http://127\.0\.0\.1:[0-9]+/ \(read-only\), (http://127\.0\.0\.1:[0-9]+/\?token=([0-9a-f]{32})) \(control\)$'
file_has out-priv.txt "$url_re"
token=$(sed -En "s#$url_re#\2#p" out-priv.txt)
[ -n "$token" ] || die "no token in hako-launch's output"

files=$(find logs -type f | sort)
for f in viewer a hako-launch; do
	grep -qx "logs/priv/$f.log" <<<"$files" || fail "no logs/priv/$f.log"
done
while read -r f; do
	mode=$(stat -c %a "$f")
	[ "$mode" = 600 ] || fail "$f has mode $mode, expected 600"
	file_lacks "$f" '^old$'
done <<<"$files"
readable=$(find logs -type f -perm /044 -exec grep -l -- "$token" {} + 2>/dev/null)
[ -z "$readable" ] || fail "the token is in files other users can read: $readable"
# Its user finds the control URL where the docs say: hako-launch.log (and viewer.log).
file_has logs/priv/hako-launch.log "^hako-launch: viewer: .*\?token=$token \(control\)$"
file_has logs/priv/viewer.log "\?token=$token$"
file_has out-priv.txt '^hako-launch: done: world time 0\.300 s'

# A link where a process's log goes: refused, its target untouched.
sed 's#"logs/priv"#"logs/link"#' priv.json >link.json
mkdir -p logs/link
echo untouched >target.txt
ln -s ../../target.txt logs/link/a.log
timeout -s KILL 60 "$LAUNCH" --path "$ASSET_DIR" link.json >out-link.txt 2>&1
rc=$?
[ "$rc" -eq 1 ] || { fail "hako-launch exited $rc with a linked log, expected 1"; show out-link.txt; }
file_has out-link.txt 'process "a": cannot create its log .*/logs/link/a\.log: a file there is not a plain file of this user'
same "the link's target" "$(cat target.txt)" untouched

finish launch.private_logs
