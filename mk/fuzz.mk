# Reader fuzzing (docs/fuzzing.md). Every tests/fuzz/harness/NAME.c hands
# bytes to one reader (tests/fuzz/fuzz.h) and is built twice:
#   - plainly, with the replay main, into $(O)/tests/fuzz/NAME: `make test`
#     replays tests/fuzz/regress/NAME/ and the seed corpus tests/fuzz/corpus/NAME/
#     (under SANITIZE=1 too);
#   - `make fuzz` (or fuzz-NAME): with clang -fsanitize=fuzzer,address,undefined
#     into $(FUZZ_BUILD)/bin/fuzz-NAME, each run for FUZZ_SECONDS, the corpus
#     growing in $(FUZZ_BUILD)/corpus/NAME, crashes in $(FUZZ_BUILD)/crash/NAME.
# FUZZ_FLAGS adds libFuzzer flags (-jobs=, -dict=, ...).

FUZZ_NAMES   := $(sort $(basename $(notdir $(wildcard tests/fuzz/harness/*.c))))
FUZZ_BUILD   ?= build/fuzz
FUZZ_SECONDS ?= 10
FUZZ_FLAGS   ?=
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# Harnesses of readers that live in a stage link that stage's objects (all
# but its main.c) and include its headers as "STAGE/x.h".
FUZZ_STAGE_config_preprocess := preprocess
FUZZ_STAGE_plan              := report
FUZZ_STAGE_reduce_plan       := reduce
fuzz_objs = $(O)/obj/tests/fuzz/harness/$(1).o $(O)/obj/tests/fuzz/driver/fuzz.o \
            $(patsubst %.c,$(O)/obj/%.o,$(filter-out %/main.c,$(if $(FUZZ_STAGE_$(1)),$(wildcard stages/$(FUZZ_STAGE_$(1))/*.c))))
$(O)/obj/tests/fuzz/harness/%.o: ALL_CFLAGS += -Istages

FUZZ_REPLAYS := $(FUZZ_NAMES:%=$(O)/tests/fuzz/%)
define fuzz_rules
$(O)/tests/fuzz/$(1): $(call fuzz_objs,$(1)) $(O)/obj/tests/fuzz/driver/replay.o $(LIBPARITY)
	@mkdir -p $$(@D)
	@echo "  LINK    $$@"
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(LIBS)
$(O)/bin/fuzz-$(1): $(call fuzz_objs,$(1)) $(LIBPARITY)
	@mkdir -p $$(@D)
	@echo "  LINK    $$@"
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -fsanitize=fuzzer -o $$@ $$^ $$(LIBS)
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_rules,$(n))))
TEST_BINS += $(FUZZ_REPLAYS)
tools: $(FUZZ_REPLAYS)

# The libFuzzer build is this Makefile again with clang into FUZZ_BUILD.
FUZZ_SUBMAKE = $(MAKE) --no-print-directory CC=$(FUZZ_CC) CC_OUT=$(FUZZ_BUILD) SANITIZE= SANFLAGS='$(FUZZ_SAN)'
fuzz-bins: $(FUZZ_NAMES:%=$(O)/bin/fuzz-%)

fuzz:
	$(Q)$(FUZZ_SUBMAKE) fuzz-bins
	$(Q)tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) '$(FUZZ_FLAGS)' $(FUZZ_NAMES)

# A campaign: every harness (or FUZZ_ONLY='npy png') until it has FUZZ_EXECS
# executions on this code (default 10M), resumable, recorded in
# $(FUZZ_BUILD)/campaign.tsv; `make fuzz-summary` prints the table
# docs/fuzzing.md quotes. Run it niced, in the background.
# FUZZ_PROCS=N runs N processes per harness on one corpus (N free cores).
FUZZ_EXECS ?= 10000000
FUZZ_PROCS ?= 1
fuzz-campaign:
	$(Q)$(FUZZ_SUBMAKE) fuzz-bins
	$(Q)FUZZ_EXECS=$(FUZZ_EXECS) FUZZ_PROCS=$(FUZZ_PROCS) nice -n 19 tests/fuzz/run.sh $(FUZZ_BUILD) 0 '$(FUZZ_FLAGS)' $(or $(FUZZ_ONLY),$(FUZZ_NAMES))
fuzz-summary:
	$(Q)tests/fuzz/run.sh --summary $(FUZZ_BUILD)

$(FUZZ_NAMES:%=fuzz-%): fuzz-%:
	$(Q)$(FUZZ_SUBMAKE) $(FUZZ_BUILD)/bin/fuzz-$*
	$(Q)tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) '$(FUZZ_FLAGS)' $*

.PHONY: fuzz fuzz-bins fuzz-campaign fuzz-summary $(FUZZ_NAMES:%=fuzz-%)
