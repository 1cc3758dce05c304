# parity — validates deployed neural networks.
#
#   make                      build every stage into build/bin/
#   make test                 every test, through prove (TAP)
#   make conformance          the ONNX backend node tests (part of make test)
#   make validate MODEL=NAME  the validation matrix of configs/models/NAME.yaml (every
#                             core: VALIDATE_JOBS=N or -jN to change; THREADS, JOBS)
#   make bench                benchmarks against peers (bench/)
#   make help                 targets and variables
#   make validate MODEL=NAME SHARDS=N  sharded; LAUNCHER=local|slurm, SLURM_PARTITION,
#                             SLURM_ACCOUNT, SLURM_TIME, SLURM_CPUS, SLURM_MAX_TASKS,
#                             SLURM_FLAGS, SLURM_WAIT (mk/scale-out.mk, docs/scale-out.md)
#
# Variables: V=1 shows commands; SANITIZE=1 builds with ASan+UBSan into
# build/san/; CC_OUT=DIR puts the compiler's outputs elsewhere (CI's clang
# build: build/clang); CC, CFLAGS, LDFLAGS, prefix, DESTDIR as usual. Pipeline
# data lands in build/ (configs name build/models and build/datasets).

# First: every variable a user or CI sets is read as text and checked.
include mk/safe-names.mk

prefix  ?= /usr/local
bindir  ?= $(prefix)/bin
CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
PROVE   ?= prove
PYTHON  ?= /usr/bin/python3

# The build folder is fixed: model configs and plans name paths under build/.
ifneq ($(filter command line override,$(origin BUILD)),)
$(error BUILD=DIR is not supported: everything generated lands in build/)
endif
BUILD   := build
# The compiler's outputs (bin/, obj/, gen/, tests/) may go elsewhere, e.g. a
# second compiler's: CC_OUT=build/clang. Pipeline data stays in build/.
CC_OUT  ?= $(BUILD)
ifeq ($(SANITIZE),1)
O       := $(CC_OUT)/san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
O       := $(CC_OUT)
SANFLAGS :=
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS     := libpng yaml-0.1 libprotobuf-c openblas jansson zlib
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# clang contracts a*b+c into FMA by default, gcc -std=c11 does not: off for
# both, so results are the same bytes whichever compiler built them.
CC_IS_CLANG := $(shell $(CC) --version 2>/dev/null | grep -q clang && echo 1)
CC_FLAGS    := -ffp-contract=off $(if $(CC_IS_CLANG),,-Wno-format-truncation)
ALL_CFLAGS  = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare $(CC_FLAGS) -Wno-missing-field-initializers \
              -MMD -MP -Istages/lib -Itests -I$(GEN) $(PKG_CFLAGS) $(SANFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(SANFLAGS) $(if $(CC_IS_CLANG),-rtlib=compiler-rt) $(LDFLAGS)
LIBS        = $(PKG_LIBS) -lm -lpthread

GEN      := $(O)/gen
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
GEN_SRCS := $(GEN)/onnx.pb-c.c $(GEN)/engine.pb-c.c
LIB_SRCS := $(sort $(wildcard stages/lib/*/*.c stages/lib/ops/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(O)/obj/%.o) $(GEN_SRCS:%.c=%.o)
LIBPARITY := $(O)/libparity.a

STAGES   := $(sort $(notdir $(filter-out stages/lib,$(patsubst %/,%,$(dir $(wildcard stages/*/main.c))))))
BINS     := $(STAGES:%=$(O)/bin/%)

TEST_C_SRCS := $(sort $(wildcard tests/unit/*.c tests/conformance/*.c tests/fuzz/*.c))
# The op-test harness (tests/ops/, docs/testing.md): one binary linked from
# every case table, the runner and the coverage check.
OPS_TEST_SRCS := $(sort $(wildcard tests/ops/*.c))
OPS_TEST    := $(O)/tests/unit/ops-harness
TEST_BINS   := $(TEST_C_SRCS:tests/%.c=$(O)/tests/%) $(OPS_TEST)
TEST_TOOLS  := $(TEST_BINS)

DEPS_OK  := $(BUILD)/.deps-ok

.PHONY: all test conformance bench validate clean help install deps tools models datasets
.DELETE_ON_ERROR:

all: $(BINS)

deps: $(DEPS_OK)
$(DEPS_OK): tools/deps.sh package.json package-lock.json
	$(Q)tools/deps.sh
	$(Q)mkdir -p $(@D) && touch $@

# Debian's onnx.proto exists only after the dependency step, so no rule
# names it as a prerequisite (make would stop before deps ran): it is copied
# in by a recipe that runs after the step, and replaced only when it differs
# (a libonnx-dev upgrade), so an unchanged copy rebuilds nothing.
$(GEN)/onnx.proto: $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)cmp -s $(ONNX_PROTO) $@ || cp $(ONNX_PROTO) $@

$(GEN)/onnx.pb-c.c: $(GEN)/onnx.proto
	@echo "  PROTOC  $@"
	$(Q)cd $(GEN) && protoc-c --c_out=. onnx.proto
$(GEN)/onnx.pb-c.h: $(GEN)/onnx.pb-c.c

$(GEN)/engine.pb-c.c: stages/lib/engine/engine.proto $(GEN)/onnx.pb-c.c
	@echo "  PROTOC  $@"
	$(Q)cp stages/lib/engine/engine.proto $(GEN)/engine.proto
	$(Q)cd $(GEN) && protoc-c --c_out=. engine.proto
$(GEN)/engine.pb-c.h: $(GEN)/engine.pb-c.c

# The version lives in VERSION alone; every --version and the engine's
# builder field read it from the generated version.h, rewritten only when
# VERSION's text changes so an unchanged version rebuilds nothing.
$(GEN)/version.h: VERSION | $(DEPS_OK)
	@mkdir -p $(@D)
	$(Q)printf '#define PARITY_VERSION "%s"\n' "$$(head -n 1 VERSION)" > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(O)/obj/%.o: %.c $(GEN_SRCS) | $(DEPS_OK) $(GEN)/version.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(GEN)/%.o: $(GEN)/%.c
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-unused -c $< -o $@

$(LIBPARITY): $(LIB_OBJS)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

# One link rule per stage folder: stages/NAME/*.c -> $(O)/bin/NAME.
define stage_rule
$(O)/bin/$(1): $(patsubst %.c,$(O)/obj/%.o,$(wildcard stages/$(1)/*.c)) $(LIBPARITY)
	@mkdir -p $$(@D)
	@echo "  LINK    $$@"
	$$(Q)$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(LIBS)
endef
$(foreach s,$(STAGES),$(eval $(call stage_rule,$(s))))

$(O)/tests/%: $(O)/obj/tests/%.o $(LIBPARITY)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(OPS_TEST): $(OPS_TEST_SRCS:%.c=$(O)/obj/%.o) $(LIBPARITY)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

tools: $(BINS) $(TEST_TOOLS) models datasets

# Seed reproducers: generated by committed scripts (python3-onnx, fixed seeds)
# into build/models/NAME/, never committed. A folder appears only when complete.
REPRODUCERS := convclip nafnet_ln mixed_cast unet_attn planted sideout
MODEL_DIRS  := $(REPRODUCERS:%=$(BUILD)/models/%/.done)
models: $(MODEL_DIRS)
$(BUILD)/models/%/.done: models/reproducers/%.py models/reproducers/common.py | $(DEPS_OK)
	@echo "  MODEL   $*"
	$(Q)rm -rf $(BUILD)/models/$*.tmp && mkdir -p $(BUILD)/models/$*.tmp
	$(Q)cd models/reproducers && $(PYTHON) $*.py $(CURDIR)/$(BUILD)/models/$*.tmp
	$(Q)touch $(BUILD)/models/$*.tmp/.done && rm -rf $(BUILD)/models/$* && mv $(BUILD)/models/$*.tmp $(BUILD)/models/$*

# The shapes dataset (issue 8): val splits drawn by gen-shapes from seed 2024
# into build/datasets/shapes-val-N/ (annotations.json + images/), never
# committed; val-200 for CI and validate, val-2000 on demand. The folder
# appears only when complete; it is redrawn when the generator's sources
# change, not on every relink.
SHAPES_SEED ?= 2024
datasets: $(BUILD)/datasets/shapes-val-200/annotations.json
$(BUILD)/datasets/shapes-val-%/annotations.json: stages/gen-shapes/main.c $(wildcard stages/lib/image/shapes*) | $(O)/bin/gen-shapes
	@echo "  SHAPES  val-$*"
	$(Q)$(O)/bin/gen-shapes --split val --seed $(SHAPES_SEED) --count $* -o $(BUILD)/datasets/shapes-val-$*
# nafnet-shapes' validation pairs (issue 36): degrade.py's blur + noise on 256x256
# crops of val-200's first 32 images, clean/ and degraded/ PNGs; the manifest
# (pixel hashes, the same on every machine) is written last.
$(BUILD)/datasets/nafnet-shapes-val-32/manifest.json: $(BUILD)/datasets/shapes-val-200/annotations.json models/nafnet-shapes/degrade.py
	@echo "  DEGRADE nafnet-shapes-val-32"
	$(Q)$(PYTHON) models/nafnet-shapes/degrade.py --images $(<D)/images --gt $< -o $(@D) --count 32
# ... and the degraded images as the model takes them (input255.yaml: RGB,
# 0..255, float32 NCHW): the inputs of configs/models/nafnet-shapes*.yaml.
NAFNET_VAL := $(BUILD)/datasets/nafnet-shapes-val-32
$(NAFNET_VAL)/input/.done: $(NAFNET_VAL)/manifest.json models/nafnet-shapes/input255.yaml | $(O)/bin/preprocess
	@echo "  PRE     nafnet-shapes-val-32"
	$(Q)rm -rf $(NAFNET_VAL)/input.tmp $(NAFNET_VAL)/input
	$(Q)$(O)/bin/preprocess --config models/nafnet-shapes/input255.yaml -o $(NAFNET_VAL)/input.tmp $(NAFNET_VAL)/degraded/*.png
	$(Q)touch $(NAFNET_VAL)/input.tmp/.done && mv $(NAFNET_VAL)/input.tmp $(NAFNET_VAL)/input

# Every test is a TAP producer: C tests are built into $(O)/tests/, shell and
# python tests run from tests/. They find the stages through PARITY_BIN.
TEST_SCRIPTS = $(sort $(wildcard tests/unit/*.t tests/stage/*.t tests/e2e/*.t))
test: tools
	$(Q)PARITY_BIN=$(CURDIR)/$(O)/bin PARITY_TESTS=$(CURDIR)/$(O)/tests PYTHON=$(PYTHON) \
	  $(PROVE) -j2 $(if $(V),-v) $(filter $(O)/tests/unit/% $(O)/tests/fuzz/%,$(TEST_BINS)) $(TEST_SCRIPTS) tests/conformance/conformance.t

conformance: tools
	$(Q)PARITY_BIN=$(CURDIR)/$(O)/bin PARITY_TESTS=$(CURDIR)/$(O)/tests CONFORMANCE_FILTER="$$FILTER" $(PROVE) -v tests/conformance/conformance.t

# The validation pipeline: `plan` turns configs/models/NAME.yaml into
# build/NAME/plan.mk (included below), where every matrix cell (variant x
# precision) is an ordinary chain of targets; reports land in reports/NAME/.
# MODEL=all runs every config; VARIANTS= and PRECISIONS= narrow the matrix;
# THREADS= sets infer's threads per cell, JOBS= preprocess's, VALIDATE_JOBS=
# how many steps run at once (below). Every step's wall and CPU time goes to
# build/NAME/timing.jsonl (`timed`); validate ends with the table by stage.
MODEL      ?= rtdetr
THREADS    ?= 1
JOBS       ?= 1
PARITY_BIN  = $(O)/bin
# Model names reach make and the shell: like every name plan writes, they use
# only letters, digits and . _ - (mk/safe-names.mk, included first). MODEL=all
# takes the config files whose names pass and names the ones it skips.
VALIDATE_MODELS = $(if $(filter all,$(MODEL)),$(MODELS_ALL),$(MODEL))

ifneq ($(filter validate validate-% plan shard-%,$(MAKECMDGOALS)),)
MODELS_ALL := $(call safe_model_files)
# Real models from outside the project (tools/real-models/fetch.sh, which
# needs the network; docs/real-models.md): MODEL=all skips the configs that
# read build/real-models/ until it is fetched, naming each on stderr, so a
# machine without them neither fails nor downloads (mk/real-models.mk).
REAL_MODELS_MISSING := $(if $(filter all,$(MODEL)),$(if $(wildcard $(BUILD)/real-models/.done),,$(call real_model_files)))
MODELS_ALL := $(filter-out $(REAL_MODELS_MISSING),$(MODELS_ALL))
VALIDATE_MODELS := $(VALIDATE_MODELS)
$(foreach m,$(VALIDATE_MODELS),$(if $(wildcard configs/models/$(m).yaml),,\
  $(error validate: no configs/models/$(m).yaml (available: $(MODELS_ALL)))))
# include, not -include: a config that plan refuses stops make there (exit
# 2), before any cell runs; its old plan.mk is removed, so no later run can
# take the stale matrix and its old verdict for this config's.
include $(VALIDATE_MODELS:%=$(BUILD)/%/plan.mk)
# The matrix's cells are independent chains of single-threaded stages
# (THREADS=1): validate runs VALIDATE_JOBS of them at once (default: every
# core), so a plain `make validate` keeps the machine busy. A -jN on the
# command line wins over this; a validate started by a recipe (make test's
# prove, MAKELEVEL > 0) keeps the parallelism its caller chose.
VALIDATE_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(VALIDATE_JOBS)
endif
endif

$(BUILD)/%/plan.mk: configs/models/%.yaml $(O)/bin/plan
	@echo "  PLAN    $*"
	$(Q)$(O)/bin/plan '$<' -o '$(BUILD)/$*' || { rm -f '$@'; \
	  echo "validate: $*: configs/models/$*.yaml does not plan (above): nothing was run" >&2; exit 2; }

plan: $(VALIDATE_MODELS:%=$(BUILD)/%/plan.mk)

# A failing threshold is a result, not a build error: every report is made,
# then validate exits 1 if any verdict is FAIL.
ifeq ($(LAUNCHER),slurm)
validate: $(VALIDATE_MODELS:%=launch-slurm-%)   # mk/scale-out.mk
else
validate: $(VALIDATE_MODELS:%=validate-%)
	@rc=0; for m in $(VALIDATE_MODELS); do $(PARITY_BIN)/report --verdict reports/$$m/results.json >/dev/null || rc=1; done; exit $$rc
endif

FORCE:
.PHONY: FORCE plan

bench: tools
	$(Q)for b in bench/*.sh; do [ -x "$$b" ] && PARITY_BIN=$(CURDIR)/$(O)/bin "$$b" || exit $$?; done

install: $(BINS)
	install -d $(DESTDIR)$(bindir)
	install -m 755 $(BINS) $(DESTDIR)$(bindir)

clean:
	rm -rf $(BUILD) reports

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

# Each concern beyond the core build keeps its rules in mk/NAME.mk.
include $(sort $(wildcard mk/*.mk))

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
