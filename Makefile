# qkit's build. `make test` is what CI runs (.ci/run); `make bench` prints the performance table.
GO          ?= go
PKG         := github.com/qkit-cli/qkit
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE        ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS     := -s -w -X $(PKG)/cmd.version=$(VERSION) -X $(PKG)/cmd.commit=$(COMMIT) -X $(PKG)/cmd.date=$(DATE)
BIN         := bin/qkit
FULL_BIN    := bin/qkit-full
PREFIX      ?= /usr/local

# Go commands build as the release binary does (cgo off, -trimpath), so vet, staticcheck, the unit
# tests, the binary and the fake share one compile of each package in the build cache; before, the
# release build's settings differed from the tests' and a clean build compiled everything twice. The
# race pass needs cgo and compiles its own. A CGO_ENABLED in the environment wins.
export CGO_ENABLED ?= 0
export GOFLAGS += -trimpath

# make test TESTFLAGS=-count=1 reruns every Go test; by default go test's cache skips the packages
# whose test binary and inputs did not change (CI sets -count=1 in .ci/run).
TESTFLAGS ?=
# go test runs a few vet checks first, and computes their facts for every dependency in each build
# configuration (the race build's too: 1.6 GB for modernc.org/sqlite on a cold cache). make test
# ran the whole of go vet before, so its unit and race passes leave them out (TESTVET=-vet=off).
TESTVET ?=
# unit and race link the test binaries without DWARF (-ldflags=-w; stack traces and race reports do
# not use it): measured, a race test binary linked in 2.5 s and 510 MB instead of 8.5 s and 630 MB.

# make test PHASE_TIMES=FILE appends one line per phase to FILE: its name, wall seconds, user and
# system CPU seconds, and the peak resident set of its largest process in KiB (make test-times).
timed = $(if $(PHASE_TIMES),/usr/bin/time -a -o $(PHASE_TIMES) -f "$(1) %e %U %S %M" )

.PHONY: fuzz-ci all build install test unit race compile race-deps lint vet staticcheck tidy gofmt interop nodedeps bench test-times docs clean fuzz fakeq browser

all: build

# Two executables from one tree (docs/notes/startup.md): bin/qkit is the light build (tag qkit_lite),
# which links none of the packages whose init every start would pay for (tablewriter, the MCP SDK,
# SQLite) and runs bin/qkit-full, the whole of qkit, for the commands that need them (found beside
# it, or in ../libexec/qkit/ once installed).
build:
	$(call timed,build)env CGO_ENABLED=0 $(GO) build -trimpath -tags qkit_lite -ldflags '$(LDFLAGS)' -o $(BIN) .
	$(call timed,build-full)env CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(FULL_BIN) .

# make install [PREFIX=~/.local] [DESTDIR=staging/]: qkit in bin, its helper qkit-full in
# libexec/qkit (as git keeps its helpers), man pages (dated SOURCE_DATE_EPOCH or the commit's date)
# and completions under $(DESTDIR)$(PREFIX); PREFIX=~/.local needs no root.
install: build
	$(GO) run ./internal/docgen/gendocs -dir bin/docs
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/qkit $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/qkit
	install -m 0755 $(FULL_BIN) $(DESTDIR)$(PREFIX)/libexec/qkit/qkit-full
	install -m 0644 bin/docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0644 bin/docs/completions/qkit.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/qkit
	install -m 0644 bin/docs/completions/qkit.zsh $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_qkit
	install -m 0644 bin/docs/completions/qkit.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/qkit.fish

# Everything CI runs: vet, go.mod tidy, gofmt and staticcheck, unit tests, testscripts, the docs drift
# check (a Go test), the concurrent packages again under the race detector, and the Node interop
# suites with the browser test. interop's packages come first: Go tests run the TypeScript stand-in
# agent with them, and under make test they fail rather than skip when it cannot run
# (QKIT_REQUIRE_INTEROP). The browser test of the questions page must run too: make browser installs
# Chromium where it can, and a missing one fails it (QKIT_REQUIRE_BROWSER).
#
# Two stages. First, one after another, the checks that need the CPU and, on a cold cache, the
# memory: the compile of every package the checks and tests import (test variants included, so
# staticcheck and the unit pass find them built), the NATS server the tests run, vet, staticcheck
# and the race build's compile of the largest package. With warm caches this stage takes seconds.
# On a cold one, single processes reach 0.6-1.1 GB: the compiles of modernc.org/sqlite/lib and of
# nats-server's server package (0.62 and 0.75 GB under GOMEMLIMIT=600MiB; sqlite/lib took 16 % more
# CPU than without) and staticcheck's analysis of sqlite/lib (1.07 GB; see STATICCHECK_ENV). So those
# compile alone, after their dependencies, and everything else BUILD_JOBS at a time, under
# BUILD_GOMEMLIMIT.
# The stage ends with the browser test (interop-browser): Chromium's 400 MiB of PSS beside the
# second stage's test links went past 1 GiB.
# Then, TEST_JOBS at a time: the interop lane (the suites, then fuzz-ci) and the race lane
# (race-deps, then race), and the unit pass when either ends. None of them compiles a large package
# any more; the tests mostly wait on the processes they start. Their memory is the test links
# (340 MiB of PSS each) and test processes: unit goes last, beside whichever lane is still running
# (with the browser test gone from this stage, 710 MiB of PSS at most, measured). fuzz-ci (about
# 30 s) follows interop rather than going before unit; measured, both orders take the same time
# (the lanes share two cores), this one lets unit start as soon as the race lane ends.
BUILD_GOMEMLIMIT ?= 600MiB
BUILD_JOBS ?= 2
TEST_JOBS ?= 2
test: export QKIT_REQUIRE_INTEROP = 1
test: export QKIT_REQUIRE_BROWSER = 1
test:
	@$(MAKE) --no-print-directory -j1 nodedeps browser tidy gofmt compile nats-server vet staticcheck race-heavy build fakeq interop-browser
	@$(MAKE) --no-print-directory -j$(TEST_JOBS) --output-sync=target interop-lane race-lane unit TESTVET=-vet=off

.PHONY: race-lane interop-lane compile-heavy race-heavy nats-server interop-suites interop-browser
race-lane:
	@$(MAKE) --no-print-directory race-deps
	@$(MAKE) --no-print-directory race
interop-lane:
	@$(MAKE) --no-print-directory interop-suites
	@$(MAKE) --no-print-directory fuzz-ci

# interop's Node packages (the official MCP and ACP TypeScript SDKs, playwright-core), as the lock file
# pins them; again only when the lock file changed.
nodedeps: interop/node_modules/.package-lock.json
interop/node_modules/.package-lock.json: interop/package-lock.json interop/package.json
	cd interop && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(call timed,nodedeps)npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The unit pass links two test binaries at a time (go test -p), beside the other lane's processes:
# with UNIT_GOGC its links and test processes collect garbage at half the default heap growth
# (GOGC=50). Measured after a one-package change, where two links meet the browser test: the
# largest link 278 -> 209 MiB, make test's peak 1055 -> 1034 MiB of PSS, the unit pass no slower.
UNIT_GOGC ?= 50
unit:
	$(call timed,unit)env GOGC=$(UNIT_GOGC) $(GO) test -ldflags=-w $(TESTVET) $(TESTFLAGS) ./...

# The race pass: the packages under internal/ whose own (non-test) code is concurrent (it starts a
# goroutine, has a channel, or uses sync or sync/atomic): the actors, agent runners, stores, servers
# and stdio plumbing. The rest (parsers, config, rendering, the test helpers without goroutines) has no
# concurrency of qkit's own for the detector to see, and their tests already ran in unit.
# TestRacePackages keeps this list to that rule. The end-to-end testscripts are left out: under -race
# they take minutes and add no concurrency of qkit's own.
# A race-built program sleeps a second as it exits (GORACE atexit_sleep_ms) to catch late races;
# the tests start the race-built test binary as the fake agent hundreds of times, so that second
# was most of this target's time (acpserver: 129 s, 16 s of CPU).
RACE_JOBS ?= 1
RACE_PKGS := acpclient acpproxy acpserver agent approval askrun commands config doctor fakeq fakeq/fakeqtest mcpbridge mcpserver mcpserver/mcptest \
	natstest output procgroup prompt questions questions/dirstore questions/internal/lifecycle questions/natsstore questions/storetest \
	questionsweb sessions stdiorpc streamjson streamjson/streamjsontest structured
race:
	$(call timed,race)env CGO_ENABLED=1 GORACE="atexit_sleep_ms=0 $(GORACE)" $(GO) test -race -p $(RACE_JOBS) -ldflags=-w $(TESTVET) $(TESTFLAGS) $(addprefix ./internal/,$(RACE_PKGS))

# compile and race-deps build every package the Go tests import, their test variants included
# (go list -export compiles without linking; go test then only compiles each test's main and
# links), and compile also builds the tools make test runs (staticcheck; go tool keeps the
# executable in the build cache), which STATICCHECK_ENV would otherwise build one package at a
# time. modernc.org/sqlite/lib, the largest package by far, compiles first and alone, after its
# dependencies (heavy_deps: the packages $(1) imports, for go build with flags $(2)).
compile_all = $(GO) list -export -test -deps -f '' $(1) >/dev/null
heavy_deps = $$($(GO) list $(2) -deps $(1) | grep -vx '$(1)')
compile: compile-heavy
	$(call timed,compile)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(call compile_all,-p $(BUILD_JOBS) ./...)
	env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) tool -n staticcheck >/dev/null
compile-heavy:
	$(call timed,compile-heavy-deps)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -p $(BUILD_JOBS) $(call heavy_deps,modernc.org/sqlite/lib)
	$(call timed,compile-heavy)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -p 1 modernc.org/sqlite/lib
race-heavy: export CGO_ENABLED = 1
race-heavy:
	$(call timed,race-heavy-deps)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -race -p $(BUILD_JOBS) $(call heavy_deps,modernc.org/sqlite/lib,-race)
	$(call timed,race-heavy)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -race -p 1 modernc.org/sqlite/lib
# One at a time: the test lane fuzzes and tests meanwhile.
race-deps:
	$(call timed,race-deps)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) CGO_ENABLED=1 $(call compile_all,-race -p 1 $(addprefix ./internal/,$(RACE_PKGS)))

# The NATS server the tests of the NATS questions store start (internal/natstest): a tool in
# go.mod, built once here for every test process of make test (QKIT_NATS_SERVER); go test on its
# own builds it with go tool. Its server package is the second largest compile: one at a time.
test: export QKIT_NATS_SERVER = $(CURDIR)/bin/nats-server
nats-server:
	$(call timed,nats-server-deps)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -p $(BUILD_JOBS) $(call heavy_deps,github.com/nats-io/nats-server/v2/server)
	$(call timed,nats-server)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) build -p 1 -o bin/nats-server github.com/nats-io/nats-server/v2

# The light build's own files (cmd/lite.go, build tag qkit_lite) are checked too: only cmd and the
# root package differ between the builds.
vet:
	$(call timed,vet)env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) vet ./...
	env GOMEMLIMIT=$(BUILD_GOMEMLIMIT) $(GO) vet -tags qkit_lite . ./cmd

# staticcheck is a tool dependency in go.mod (the tool directive; go.sum pins its modules), which
# `go tool` builds once into the build cache like any package.
lint: vet tidy gofmt staticcheck
# Its first analysis of the dependencies (a cold staticcheck cache, the packages compiled) peaks
# at sqlite/lib, measured on two cores: 1.07 GB with GOMAXPROCS=1 (35 s), 0.74 GB with both
# settings (42 s). Later runs read its cache and take a second or two.
STATICCHECK_ENV ?= GOMAXPROCS=1 GOMEMLIMIT=700MiB
staticcheck:
	$(call timed,staticcheck)env $(STATICCHECK_ENV) $(GO) tool staticcheck ./...
	env $(STATICCHECK_ENV) $(GO) tool staticcheck -tags qkit_lite . ./cmd

# Every Go file must be as gofmt writes it (the unformatted ones are listed otherwise).
gofmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "not gofmt-formatted (run gofmt -w):"; echo "$$out"; exit 1; fi

# go.mod and go.sum must be what `go mod tidy` makes of them (it prints the difference otherwise).
tidy:
	$(call timed,tidy)$(GO) mod tidy -diff

# The stand-in agent as bin/fakeq/q (and bin/fakeq/kiro-cli, the same fake): put bin/fakeq first
# on PATH to try qkit without q (README); FAKEQ_FLAVOUR=q or kiro makes it act as q 1.19.7 or kiro-cli 2.x.
fakeq:
	$(call timed,fakeq)$(GO) build -o bin/fakeq/q ./internal/fakeq/q
	cp bin/fakeq/q bin/fakeq/kiro-cli

# The suites that run the fake agent (those that import flavour or agentCommand from env.js) run
# once per flavour: q 1.19.7 and kiro-cli 2.x (FAKEQ_FLAVOUR); the others do not depend on it and run
# once, with the first. The browser test (interop-browser) is one of those, and runs on its own:
# Chromium's processes take 400 MiB of PSS, which beside make test's Go links and test processes went
# past 1 GiB.
INTEROP_FLAVOURS := q kiro
interop: build fakeq browser nodedeps
	@$(MAKE) --no-print-directory interop-browser
	@$(MAKE) --no-print-directory interop-suites
# The suites alone, for make test, which builds what they need in its first stage (so that in the
# second, make -j starts no other target while they wait for their binaries).
interop_env = FAKEQ_FLAVOUR=$(1) QKIT_BIN=$(CURDIR)/$(BIN) FAKEQ_DIR=$(CURDIR)/bin/fakeq QKIT_CHROMIUM=$(CHROMIUM)
interop-suites:
	cd interop && first=1 && for flavour in $(INTEROP_FLAVOURS); do \
			if [ -n "$$first" ]; then suites=$$(ls *.test.js | grep -vx questions-web.test.js); \
			else suites=$$(grep -lE '\b(flavour|agentCommand)\b' *.test.js); fi; first=; \
			echo "interop: FAKEQ_FLAVOUR=$$flavour:" $$suites; \
			$(call interop_env,$$flavour) $(call timed,interop-$$flavour)npm test -- $$suites || exit 1; \
		done
interop-browser:
	cd interop && $(call interop_env,$(firstword $(INTEROP_FLAVOURS))) $(call timed,interop-browser)npm test -- questions-web.test.js

# The browser test of `qkit questions serve` (interop/questions-web.test.js) drives Debian's
# Chromium through playwright-core, which never downloads a browser. Installed here when missing
# and possible (root with apt-get, as in CI); otherwise the test says why it is skipped. Under make test
# (QKIT_REQUIRE_BROWSER) or in CI (CI set) a missing browser fails the test instead.
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing chromium for the browser test"; \
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null || \
			{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null; }; \
		else \
			echo "no Chromium at $(CHROMIUM) and no root apt-get to install it: the browser test will be skipped (apt-get install chromium, or CHROMIUM=/path/to/chromium)"; \
		fi; \
	fi

# Short fuzz runs of every fuzz target (each FUZZTIME long).
FUZZTIME ?= 10s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "$$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# The fuzz targets of the parsers that read a repository's or an assistant's input (context rules and
# configs, question sets, answers, the questions store's files) fuzz for FUZZCI_TIME each in make test,
# besides their seed corpora in the unit pass. A failure leaves its input in testdata/fuzz.
FUZZCI_TIME ?= 3s
FUZZCI := ./internal/contextfiles:FuzzGlobPattern ./internal/contextfiles:FuzzContextConfig \
	./internal/contextfiles:FuzzRelativeRuleStaysInside ./internal/questions:FuzzParseQuestionSet \
	./internal/questions:FuzzAnswerSpecs ./internal/questions:FuzzAnswersFile ./internal/questions/dirstore:FuzzSessionFiles
# (internal/structured/schema's FuzzCompile, the MCP tool's output_schema, fuzzes in make fuzz only:
# its worker reached 631 MiB of RSS in make test beside the unit links, validating deep answers
# against schemas just under the cost limit; its seeds run in the unit pass.)
fuzz-ci:
	@for t in $(FUZZCI); do \
		pkg=$${t%%:*}; f=$${t#*:}; echo "fuzz $$pkg $$f"; \
		$(call timed,fuzz-ci)$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZCI_TIME) -parallel 2 $$pkg >/dev/null || \
			{ $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZCI_TIME) $$pkg; exit 1; }; \
	done

# make bench ends with the last figures make test-times wrote (bin/test-times.txt), or says how to get
# them: measuring make test takes minutes, more than bench should.
bench:
	$(GO) run ./bench
	@if [ -f bin/test-times.txt ]; then echo; echo "make test (from bin/test-times.txt, by make test-times):"; cat bin/test-times.txt; \
	else echo; echo "make test's phase times: run make test-times (it clones HEAD and runs make test three times; minutes)"; fi

# make test-times [TEST_TIMES_FLAGS=-fresh]: make test on a clean clone of HEAD (every Go test
# run), again (filling go test's cache), then after a change to one package (internal/contextfiles;
# -change DIR), with each phase's time and memory against the project's targets (5 min, 2 min,
# 1 GB); the table goes to bin/test-times.txt. -fresh starts the clean clone with an empty build
# cache and staticcheck cache; by default they are this machine's.
test-times:
	$(GO) run ./bench/testtimes $(TEST_TIMES_FLAGS)

docs:
	$(GO) run ./internal/docgen/gendocs -dir .

clean:
	rm -rf bin dist interop/node_modules
