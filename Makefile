# hearth build.  `make` builds build/hearth; `make test` runs every test;
# `make run` starts `hearth run`: continuous profiling served on http://127.0.0.1:4100.
#
# Sources are found by wildcard: a new file under src/MODULE/ (or a folder of it,
# src/MODULE/PART/, as the store's backends) needs no edit here.

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c
BUILD   := build
GEN     := $(BUILD)/gen

# Installs missing Debian packages (only when missing) before anything else.
DEPS_STAMP := $(BUILD)/.deps-ok
TEST_DEPS_STAMP := $(BUILD)/.test-deps-ok

WARN    := -Wall -Wextra -Werror
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(WARN) -g -Isrc -Ibpf -I$(GEN) -MMD -MP
CFLAGS  ?= -O2
# libyaml (the scrape config) through pkg-config, -lyaml where that is missing.
YAML_LIBS := $(shell pkg-config --libs yaml-0.1 2>/dev/null || echo -lyaml)
# libcurl, libdebuginfod and libmicrohttpd are not linked: they are opened with dlopen on
# first use (src/base/curl_lazy.c, src/base/mhd_lazy.c, src/symbolize/sym_debuginfod.c),
# as their ~30 libraries' relocations were two thirds of every start of hearth.
LDLIBS  := -lbpf -ldw -lelf -lz -ldeflate -lprotobuf-c -lsqlite3 -ljson-c \
	   $(YAML_LIBS) -l:libiberty.a -lpthread -lm
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

SRCS     := $(sort $(wildcard src/*/*.c src/*/*/*.c))
LIB_SRCS := $(filter-out src/cli/%,$(SRCS))
CLI_SRCS := $(filter src/cli/%,$(SRCS))
# protoc-c code of proto/*.proto: pprof's profile, Pyroscope's querier and types.
PROTOS   := profile querier types
GEN_SRCS := $(patsubst %,$(GEN)/%.pb-c.c,$(PROTOS)) $(GEN)/web_files.c
GEN_OBJS := $(patsubst %,gen/%.pb-c.o,$(PROTOS)) gen/web_files.o
OBJS      := $(patsubst %.c,$(BUILD)/obj/%.o,$(SRCS)) $(addprefix $(BUILD)/obj/,$(GEN_OBJS))
LIB_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(LIB_SRCS)) $(addprefix $(BUILD)/san/,$(GEN_OBJS))

# The web UI, embedded in the binary: every file under web/ (dotfiles, web/test/ and the
# helpers' *.md notes left out). web.list changes only when the set of files
# does, so adding or removing a file regenerates the table too.
WEB_FILES := $(shell find web -path web/test -prune -o -type f ! -name '.*' ! -name '*.md' -print 2>/dev/null | LC_ALL=C sort)
WEB_LIST  := $(GEN)/web.list
$(shell mkdir -p $(GEN) && echo '$(WEB_FILES)' | cmp -s - $(WEB_LIST) || \
	echo '$(WEB_FILES)' > $(WEB_LIST))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

.PHONY: all deps test-deps unit-tests fuzz test test-repeat run bench clean format man install uninstall
all: $(BUILD)/hearth

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	bash scripts/install-deps.sh
	@touch $@

test-deps: $(TEST_DEPS_STAMP)
$(TEST_DEPS_STAMP): scripts/install-deps.sh tests/ui/package-lock.json tests/clients/package-lock.json
	@mkdir -p $(BUILD)
	bash scripts/install-deps.sh --test
	cd tests/ui && npm ci --no-audit --no-fund --loglevel=error
	cd tests/clients && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# vmlinux.h from the running kernel's BTF (CO-RE relocates against it at load time).
$(GEN)/vmlinux.h: | $(DEPS_STAMP)
	@mkdir -p $(GEN)
	@if [ ! -r /sys/kernel/btf/vmlinux ]; then \
		echo "error: /sys/kernel/btf/vmlinux is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF); hearth's BPF program needs it" >&2; exit 1; fi
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h $(GEN)/vmlinux.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -I$(GEN) -Ibpf -c $< -o $@
	llvm-strip -g $@

.SECONDARY:
$(GEN)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(GEN)/%.pb-c.c $(GEN)/%.pb-c.h: proto/%.proto | $(DEPS_STAMP)
	@mkdir -p $(GEN)
	$(PROTOC_C) --proto_path=proto --c_out=$(GEN) proto/$*.proto

$(BUILD)/tools/embed: tools/embed.c src/server/web_files.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -O2 -o $@ $<

$(GEN)/web_files.c: $(BUILD)/tools/embed $(WEB_LIST) $(WEB_FILES)
	$(BUILD)/tools/embed $@ web $(WEB_FILES)

GENERATED := $(patsubst %,$(GEN)/%.pb-c.h,$(PROTOS))
# Only the sampler includes the BPF skeleton.
SAMPLER_SRCS := $(filter src/sampler/%,$(SRCS))
$(patsubst %.c,$(BUILD)/obj/%.o,$(SAMPLER_SRCS)) $(patsubst %.c,$(BUILD)/san/%.o,$(SAMPLER_SRCS)) \
	$(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(SAMPLER_SRCS)): $(GEN)/profile.skel.h

$(BUILD)/obj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -Wno-unused-parameter -c $< -o $@
$(BUILD)/san/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -O1 $(SAN) -Wno-unused-parameter -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(GENERATED)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -c $< -o $@
$(BUILD)/san/%.o: %.c | $(GENERATED)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -O1 $(SAN) -c $< -o $@

$(BUILD)/hearth: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# The whole binary under ASan/UBSan (LeakSanitizer at exit), for integration tests.
CLI_OBJS_SAN := $(patsubst %.c,$(BUILD)/san/%.o,$(CLI_SRCS))
$(BUILD)/hearth-asan: $(LIB_OBJS_SAN) $(CLI_OBJS_SAN)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

# Unit tests: every library module linked in, under ASan/UBSan.
$(BUILD)/tests/test_%: $(BUILD)/san/tests/unit/test_%.o $(BUILD)/san/tests/unit/unit.o $(LIB_OBJS_SAN)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

unit-tests: $(UNIT_BINS)

# The store's crash-test driver and benchmark: library modules linked in, optimized.
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(addprefix $(BUILD)/obj/,$(GEN_OBJS))
$(BUILD)/tests/store_driver $(BUILD)/bench/store_bench: $(BUILD)/%: %.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -o $@ $^ $(LDLIBS)

# libFuzzer targets (clang), with the library modules under ASan and UBSan. A UBSan
# report must end the run as a finding: without -fno-sanitize-recover it is printed
# and the run goes on to "PASS". The library is compiled once for every target
# (fuzzer-no-link: instrumented for coverage, no libFuzzer main), each target
# links its own file with it.
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -Ibpf -I$(GEN) -fno-sanitize-recover=all
FUZZ_LIB_OBJS := $(patsubst %.c,$(BUILD)/fuzzobj/%.o,$(LIB_SRCS)) \
	$(patsubst $(GEN)/%.c,$(BUILD)/fuzzobj/gen/%.o,$(GEN_SRCS))
$(BUILD)/fuzzobj/gen/%.o: $(GEN)/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
$(BUILD)/fuzzobj/%.o: %.c | $(GENERATED)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_LIB_OBJS) | $(GENERATED)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_LIB_OBJS) $(LDLIBS)
# The config file's syntax is a CLI part with no dependencies: only its parser is linked.
$(BUILD)/fuzz/fuzz_config: tests/fuzz/fuzz_config.c src/cli/conf_parse.c src/cli/cli.h
	@mkdir -p $(dir $@)
	$(CLANG) -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ tests/fuzz/fuzz_config.c src/cli/conf_parse.c
# hearth query's text renderer is a CLI part: linked alone, with json-c.
$(BUILD)/fuzz/fuzz_query_text: tests/fuzz/fuzz_query_text.c src/cli/query_text.c src/cli/query_text.h
	@mkdir -p $(dir $@)
	$(CLANG) -std=c11 -D_GNU_SOURCE -g -O1 -Isrc -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ tests/fuzz/fuzz_query_text.c src/cli/query_text.c -ljson-c
fuzz: $(FUZZ_BINS)

# Builds on every core (the README's `make test` has no -j of its own), then runs the
# suite. tests/run.sh builds the fuzz targets on idle CPU beside the first shared
# tests, before the serial ones (builds are process churn in the figures of the
# tests that measure hearth); one that fails to build is reported by its own run,
# as a failure.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: $(TEST_DEPS_STAMP)
	$(MAKE) -j$(NPROC) $(BUILD)/hearth $(BUILD)/hearth-asan unit-tests
	bash tests/run.sh

# The whole suite N times, each on a fresh clone of HEAD, as CI runs it (HOG=1: a CPU
# hog on core 0 in every run, HOG=last: in the last run): lists every check that
# failed at least once (tests/repeat.sh).
N ?= 3
HOG ?= 0
test-repeat:
	HOG=$(HOG) bash tests/repeat.sh $(N)

run: $(BUILD)/hearth
	$(BUILD)/hearth run

bench: $(TEST_DEPS_STAMP) $(BUILD)/hearth
	bash bench/overhead
	bash bench/offcpu/run

format:
	clang-format -i $(SRCS) $(wildcard src/*/*.h src/*/*/*.h) $(wildcard tests/unit/*.[ch]) $(wildcard tools/*.c)

# ---- installation (docs/install.md) ----
# make install [PREFIX=/usr/local] [DESTDIR=] installs the binary, man pages, systemd
# units (not enabled), docs, and the example config as /etc/hearth/hearth.conf unless
# one is already there. debian/rules calls it with PREFIX=/usr.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/hearth
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
UNITS      := $(notdir $(wildcard dist/systemd/*.service))
DOCS       := README.md $(wildcard docs/*.md)
MAN_STAMP  := $(BUILD)/man/.stamp

# Man pages from the built binary's --help (tools/gen-man.sh).
$(MAN_STAMP): $(BUILD)/hearth tools/gen-man.sh
	rm -rf $(BUILD)/man
	bash tools/gen-man.sh $(BUILD)/hearth $(BUILD)/man/man1
	@touch $@
man: $(MAN_STAMP)

install: $(BUILD)/hearth $(MAN_STAMP)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/hearth
	install -m 755 $(BUILD)/hearth $(DESTDIR)$(BINDIR)/hearth
	install -m 644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	for u in $(UNITS); do \
		sed 's|/usr/bin/hearth|$(BINDIR)/hearth|' dist/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -m 644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 644 dist/hearth.conf $(DESTDIR)$(DOCDIR)/hearth.conf.example
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf (the example is in $(DOCDIR))"; \
	else install -m 644 dist/hearth.conf $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf; fi

# Removes what install put there; the config only when it is still the example.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/hearth
	rm -f $(DESTDIR)$(MANDIR)/man1/hearth.1 $(DESTDIR)$(MANDIR)/man1/hearth-*.1
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -rf $(DESTDIR)$(DOCDIR)
	@if cmp -s dist/hearth.conf $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf; \
		rmdir $(DESTDIR)$(SYSCONFDIR)/hearth 2>/dev/null || true; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/hearth/hearth.conf: it was edited"; fi

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
