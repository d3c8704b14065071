#!/bin/sh
# mcap.real_reader: mcap_fixture writes recordings with hako_mcap and a manifest of what they hold;
# check_mcap.mjs reads them with @mcap/core + @mcap/support (test/mcap/node, pinned) and compares.
# Then the other way: write_mcap.mjs writes files with @mcap/core's McapWriter and compares what
# hako_mcap's reader finds in them (mcap_fixture --dump).
# The npm packages are checked here, at run time, so that `make test` may install them after the
# build was configured.
#   run_real_reader.sh FIXTURE_EXE WORK_DIR
set -u
fixture=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
	echo "mcap.real_reader: node is missing: apt-get install nodejs npm (make test-deps)" >&2
	exit 1
fi
for p in @mcap/core @mcap/support @foxglove/wasm-zstd; do
	if [ ! -d "$here/node/node_modules/$p" ]; then
		echo "mcap.real_reader: $p is missing: npm ci --prefix $here/node (make test-deps)" >&2
		exit 1
	fi
done
rm -rf "$work"
"$fixture" "$work" || exit 1
node "$here/check_mcap.mjs" "$work" || exit 1
node "$here/write_mcap.mjs" "$fixture" "$work/js" || exit 1
rm -rf "$work"
