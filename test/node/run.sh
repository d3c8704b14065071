#!/bin/sh
# Run one of test/node's scripts with node. The check is made when the test runs, not when
# cmake configures, so `make test` (which installs node and the packages after configuring)
# passes on a fresh machine; a test whose tools are missing fails and says how to get them.
here=$(cd "$(dirname "$0")" && pwd)
node=${HAKO_NODE:-node}
if ! command -v "$node" >/dev/null 2>&1; then
	echo "node is not installed: run 'make test-deps' (Debian's nodejs and npm, then npm ci in test/node)" >&2
	exit 1
fi
if [ ! -d "$here/node_modules" ]; then
	echo "the npm packages of test/node are not installed: run 'make test-deps' or 'npm ci --prefix test/node'" >&2
	exit 1
fi
script=$1
shift
exec "$node" "$here/$script" "$@"
