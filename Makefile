# The front door. `make run` and `make test` work on a fresh Debian machine as root (or with
# sudo): they install what is missing, build, then run the demo or the whole test suite.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# iproute2: hako-netlab builds its nodes' links with ip (the netlab tests need it too).
PACKAGES := build-essential libjansson-dev libzmq3-dev libsodium-dev libcmocka-dev libwebsockets-dev libmosquitto-dev cmake pkg-config \
            python3-dev libzstd-dev liblz4-dev iproute2
# Only `make test` needs these: the viewer's browser tests (viewer.browser*) drive Debian's chromium;
# the mqtt tests (endpoint.mqtt*) start a mosquitto broker and its clients.
TEST_PACKAGES := chromium mosquitto mosquitto-clients
# The tests against clients nobody here wrote (Foxglove's, MCAP's and npm's mqtt packages) run on node:
# Debian's nodejs and npm unless they are there already (NodeSource's nodejs brings its own npm
# and conflicts with Debian's), then `npm ci` of each folder's lock file, again when it changes.
TEST_PACKAGES += $(if $(shell command -v node),,nodejs) $(if $(shell command -v npm),,npm)
NPM_TEST_DIRS := test/node test/mcap/node
NPM_STAMPS := $(addsuffix /node_modules/.package-lock.json,$(NPM_TEST_DIRS))
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CMAKE_FLAGS ?=

.PHONY: all deps test-deps build test run bench install format format-check clean

all: build

deps test-deps:
	@missing=""; for p in $(if $(filter test-deps,$@),$(TEST_PACKAGES),$(PACKAGES)); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "all packages present"; fi
	$(if $(filter test-deps,$@),@$(MAKE) --no-print-directory $(NPM_STAMPS))

# npm ci (no install scripts) only when node_modules is missing or older than the lock file.
%/node_modules/.package-lock.json: %/package-lock.json %/package.json
	cd $* && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build test-deps
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

# The demos, run by hako-launch from the build tree. DEMO=forklift (the default): the RD-Light
# demo, 20 s simulated at 4x real time; the report ends with the path of the plot.
# DEMO=federation: three nodes (a server and two clients, each its own domain) exchanging PDUs
# through bridges for 5 s of world time; each node ends with its drift table.
# DEMO=service: Hakoniwa's service API, one server and two clients checking 100 sums.
# DEMO=rd-full: the forklift handed between two nodes of a federation every 5 s of world time;
# DEMO=rd-full-boundary: the same, handed over where it crosses x = 1 m.
# DEMO=fleet: 256 drones on two host processes spell "HAKO", fly a circle and land.
# DEMO=show: the drone show, 1024 drones on 8 client nodes of a federation, each node a machine of
# its own in a hako-netlab lab (as root; on loopback otherwise, and it says so), balanced across
# the nodes, one node killed mid-show; then the report (docs/show.md).
# DEMO=python: the forklift demo with its controller in Python (hakopy); a check after the
# report compares the mission it wrote and every PDU it read with the model's own record.
DEMO ?= forklift
run: build
	@case "$(DEMO)" in \
	forklift) cd $(BUILD)/samples/forklift && \
	  $(abspath $(BUILD))/bin/hako-launch --quiet launch.json ;; \
	federation) cd $(BUILD)/samples/federation && \
	  $(abspath $(BUILD))/bin/hako-launch config/federation.json ;; \
	service) cd $(BUILD)/samples/service && \
	  $(abspath $(BUILD))/bin/hako-launch launch.json ;; \
	rd-full) cd $(BUILD)/samples/rd-full && ./run.sh --out run ;; \
	rd-full-boundary) cd $(BUILD)/samples/rd-full && ./run.sh --boundary --out run ;; \
	fleet) cd $(BUILD)/samples/fleet && rm -rf logs && \
	  $(abspath $(BUILD))/bin/hako-launch launch.json ;; \
	show) mkdir -p $(BUILD)/samples/show && cd $(BUILD)/samples/show && \
	  bash $(CURDIR)/samples/show/show.sh --build $(abspath $(BUILD)) --out run ;; \
	python) cd $(BUILD)/samples/forklift && \
	  { [ -f launch-python.json ] || { echo "DEMO=python needs hakopy: configure with" \
	      "-DHAKO_BUILD_PYTHON=ON (python3-dev)"; exit 2; }; } && \
	  $(abspath $(BUILD))/bin/hako-launch --quiet launch-python.json ;; \
	*) echo "DEMO=$(DEMO): the demos are forklift, federation, service, rd-full," \
	     "rd-full-boundary, fleet, show and python"; exit 2 ;; \
	esac

bench: build
	./bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)
