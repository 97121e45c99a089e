# faultline: one binary, one static library, tests, fuzzers and benchmarks that link it.
#
#   make               build ./faultline (-O2 -g)
#   make check         bootstrap, build under ASan+UBSan, run every test (unit, fuzz replay, e2e)
#   make demo          bootstrap, build, run the main job on the embedded defaults
#   make bench         build optimised and run the benchmarks (figures in docs/performance.md)
#   make attack        build optimised and attack the controller and the shim (docs/reliability.md)
#   make fuzz          build libFuzzer targets with clang (build/fuzz/)
#   make mutation-check build with redaction switched off (build/mutant/) and check that every
#                      secret-leak test fails against it (docs/testing.md); not part of check
#   make install PREFIX=/usr/local
#   make format-check
#
# MODE selects the build flavour and its object directory: rel (default), asan, or mutant
# (optimised, with FAULTLINE_MUTATE_NO_REDACT: redaction off, for `make mutation-check` only).

MODE    ?= rel
BUILD   := build/$(MODE)
CC      ?= cc
PREFIX  ?= /usr/local
PKGS    := libevent libevent_openssl openssl jansson yaml-0.1 sqlite3

WARN    := -Wall -Wextra -Werror -Wstrict-prototypes -Wvla -Wwrite-strings -Wformat-security \
           -Wno-unused-parameter
STD     := -std=gnu11 -D_GNU_SOURCE
ifeq ($(MODE),asan)
OPT     := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(MODE),mutant)
OPT     := -O2 -g -DFAULTLINE_MUTATE_NO_REDACT
else
OPT     := -O2 -g
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CFLAGS_ALL := $(STD) $(OPT) $(WARN) -Isrc $(PKG_CFLAGS) $(CFLAGS)
# The libraries are linked statically (Debian's -dev packages ship the archives; glibc stays
# shared), in dependency order: each exec of faultline (the controller, a hook gate, a shim,
# the sandbox's supervisor) then starts without resolving thousands of symbols across seven
# shared objects, about 1.2 ms of CPU instead of 3.6 (docs/performance.md, "## startup").
STATIC_LIBS := -levent_openssl -levent -lssl -lcrypto -ljansson -lyaml -lsqlite3
LDLIBS_ALL := -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic -lm -lpthread -ldl $(LDLIBS)

LIB_SRC  := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c)))
CLI_SRC  := $(sort $(wildcard src/cli/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
BENCH_SRC:= $(sort $(wildcard bench/bench_*.c))

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libfaultline.a
BIN      := $(BUILD)/faultline
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz-replay/%)
BENCH_BIN:= $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all tests check demo bench attack fuzz install format format-check clean bootstrap \
        mutation-check
.DEFAULT_GOAL := all

ifeq ($(MODE),rel)
all: faultline
faultline: $(BIN)
	cp $(BIN) $@
else
all: $(BIN)
endif

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS_ALL)

$(BUILD)/tests/%: tests/unit/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -o $@ $< $(LIB) $(shell pkg-config --libs cmocka) $(LDLIBS_ALL)

# Fuzz targets are also built as plain programs that replay their corpus (tests/fuzz/replay.c),
# so the corpus runs under ASan+UBSan in `make check` with no libFuzzer needed.
$(BUILD)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< tests/fuzz/replay.c $(LIB) $(LDLIBS_ALL)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -o $@ $< $(LIB) $(LDLIBS_ALL)

tests: $(BIN) $(UNIT_BIN) $(FUZZ_BIN)

bootstrap:
	@scripts/bootstrap

check: bootstrap
	$(MAKE) MODE=asan tests
	tests/run build/asan

# The demo installs only what it runs (scripts/bootstrap --demo), builds with parallel jobs.
demo:
	scripts/bootstrap --demo
	$(MAKE) -j$$(nproc) MODE=rel all
	scripts/demo

bench: bootstrap
	$(MAKE) MODE=rel all $(BENCH_BIN)
	bench/run build/rel

# The secret-leak tests (listed in tests/mutation) must all fail when redaction is off.
mutation-check: bootstrap
	$(MAKE) MODE=mutant all
	tests/mutation build/mutant

# ATTACK_SECONDS: how long each attack on the controller lasts (60 in docs/reliability.md)
ATTACK_SECONDS ?= 60
attack: bootstrap
	$(MAKE) MODE=rel all
	python3 bench/attack/attack.py --faultline ./faultline --seconds $(ATTACK_SECONDS)
	python3 bench/attack/shim_attack.py --faultline ./faultline

FUZZ_LIBFUZZER := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
fuzz: $(FUZZ_LIBFUZZER)
build/fuzz/%: tests/fuzz/%.c $(LIB_SRC)
	@mkdir -p $(dir $@)
	clang $(STD) -O1 -g -fsanitize=fuzzer,address,undefined -Isrc $(PKG_CFLAGS) -o $@ $< $(LIB_SRC) $(LDLIBS_ALL)

install: all
	install -D -m 0755 faultline $(DESTDIR)$(PREFIX)/bin/faultline
	mkdir -p $(DESTDIR)$(PREFIX)/share/faultline
	cp -R examples $(DESTDIR)$(PREFIX)/share/faultline/
	rm -rf $(DESTDIR)$(PREFIX)/share/faultline/examples/demo/node_modules

format:
	clang-format -i $(LIB_SRC) $(CLI_SRC) $(wildcard src/*/*.h)

format-check:
	clang-format --dry-run --Werror $(LIB_SRC) $(CLI_SRC) $(wildcard src/*/*.h)

clean:
	rm -rf build faultline

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_BIN:=.d) $(BENCH_BIN:=.d)
