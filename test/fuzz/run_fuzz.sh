#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a while; exit 1 on a finding.
#   test/fuzz/run_fuzz.sh <seconds> [target...]
# targets: pdu_decode pdu_json (the default), cdr_decode, frame, segment, conductor_wire,
# conductor_link, rd_full_wire, mcap_reader
# Build dir: $HAKO_FUZZ_BUILD (default build-fuzz/). Each target reads the checked-in corpus
# test/fuzz/corpus/<target>/ (and test/fuzz/<target>.dict if there is one) and grows its own
# working corpus in <build>/fuzz-corpus/<target>/ (kept between runs, never written back to the
# source tree). A crash, leak, UB report, timeout or failed check lands in
# <build>/fuzz-findings/<target>/, is minimized, and the script says what to do with it: add the
# minimized file to test/fuzz/corpus/<target>/ so ctest's fuzz.<target>_replay covers it.
# Extra libFuzzer flags: $FUZZ_ARGS.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
	echo "usage: $0 <seconds> [pdu_decode] [pdu_json] [cdr_decode] [frame] [segment] [conductor_wire] [conductor_link] [rd_full_wire] [mcap_reader]" >&2
	exit 2
fi
seconds=$1
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	targets=(pdu_decode pdu_json)
fi

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${HAKO_FUZZ_BUILD:-$src/build-fuzz}
cc=${CC:-clang}
if ! command -v "$cc" >/dev/null; then
	echo "$0: $cc not found (apt-get install clang libclang-rt-14-dev)" >&2
	exit 1
fi

# Warnings are gated by the gcc builds; here only findings count.
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DHAKO_FUZZ=ON -DHAKO_SANITIZE=address,undefined -DHAKO_WERROR=OFF \
	-DHAKO_BUILD_TESTS=ON -DHAKO_BUILD_BENCH=OFF >/dev/null
build_targets=()
for t in "${targets[@]}"; do
	build_targets+=(--target "fuzz_$t")
done
cmake --build "$build" -j "$(nproc)" "${build_targets[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
for t in "${targets[@]}"; do
	bin=$build/test/fuzz/fuzz_$t
	corpus=$build/fuzz-corpus/$t
	findings=$build/fuzz-findings/$t
	mkdir -p "$corpus" "$findings"
	before=$(find "$findings" -type f | sort)
	dict=()
	if [ -f "$src/test/fuzz/$t.dict" ]; then
		dict=(-dict="$src/test/fuzz/$t.dict")
	fi
	echo "== fuzz_$t for ${seconds}s" >&2
	rc=0
	# shellcheck disable=SC2086 # FUZZ_ARGS is split on purpose
	"$bin" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" ${FUZZ_ARGS:-} \
		"$corpus" "$src/test/fuzz/corpus/$t" || rc=$?
	if [ "$rc" -eq 0 ]; then
		continue
	fi
	status=1
	new=$(comm -13 <(echo "$before") <(find "$findings" -type f | sort))
	echo "== fuzz_$t: finding (exit $rc)" >&2
	for f in $new; do
		case $f in *.min) continue ;; esac
		# -timeout: a hang is minimized in bounded time too (else each run may last 20 min).
		"$bin" -minimize_crash=1 -max_total_time=30 -timeout=10 -exact_artifact_path="$f.min" \
			"$f" >/dev/null 2>&1 || true
		[ -f "$f.min" ] || cp "$f" "$f.min"
		echo "   $f -> minimized $f.min ($(stat -c %s "$f.min") bytes)" >&2
		echo "   reproduce: $bin $f.min" >&2
	done
	echo "   then: cp <file>.min $src/test/fuzz/corpus/$t/<name> (replayed by ctest)" >&2
done
exit $status
