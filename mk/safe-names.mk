# mk/safe-names.mk — every variable a user or CI can set, read as literal
# text and checked before make or the shell sees it. The Makefile includes
# this first, before it reads any variable; mk/*.mk and every plan.mk come
# after. One mechanism for all of them (docs/scale-out.md, docs/design.md):
#
# 1. Every variable given on the command line or in the environment that is
#    declared below, and every other command-line variable, is taken as text
#    ($(value)) and never expanded: X='$(shell ...)' runs nothing, because
#    make no longer expands it when it reads it or exports it to a recipe
#    (a recursive command-line variable is expanded on export even when no
#    rule reads it). It stays exported, as it was.
# 2. Each is then checked against its class's alphabet and refused, one
#    line and exit 2, with anything else. A command-line variable declared
#    nowhere is checked as SAFE_FLAGS.
# 3. An environment variable not declared here whose value holds a '$' is
#    taken as text too (a later rule that reads it runs nothing).
#
# A variable a new rule reads from the user must be declared in one class:
# tests/stage/make_vars.t lists every variable the Makefile, mk/*.mk and
# plan.mk read without setting and fails on one declared nowhere.
ifndef SAFE_NAMES_MK
SAFE_NAMES_MK := 1

# names: models, variants, precisions, counts, switches. The alphabet is the
# one plan checks every name against (stages/plan/write.c).
SAFE_NAMES := MODEL VARIANTS PRECISIONS THREADS JOBS SHARDS SHARD LAUNCHER PARITY_SHARD_MERGE \
              PRECISION SLURM_PARTITION SLURM_CPUS SLURM_MAX_TASKS SLURM_WAIT ZOO SHAPES_SEED \
              FUZZ_SECONDS FUZZ_EXECS FUZZ_PROCS FUZZ_ONLY SANITIZE V CELL \
              VALIDATE_JOBS
# flags, paths and tool commands: names plus / + = , : @ (sbatch's
# --time=1:00:00, --criterion cosine=0.99, CFLAGS='-O2 -g', CC=/usr/bin/gcc).
SAFE_FLAGS := CC CFLAGS LDFLAGS OPT PROVE PYTHON prefix bindir DESTDIR CC_OUT ONNX_PROTO \
              FUZZ_BUILD FUZZ_CC FUZZ_FLAGS SLURM_ACCOUNT SLURM_TIME SLURM_FLAGS CRITERION FIXP_ARGS
# free text (regular expressions): reaches its program only through the
# environment ("$$FILTER"), never a recipe's text; no newline or tab.
SAFE_TEXT  := FILTER ZOO_FILTER

safe_chars := A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
              a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9 . _ -
safe_flag_chars := $(safe_chars) / + = , : @
safe_empty :=
safe_space := $(safe_empty) $(safe_empty)
safe_comma := ,
safe_tab   := $(safe_empty)	$(safe_empty)
define safe_nl


endef
# what is left of $(1) once every character of $(2) (and the spaces between
# words) is taken out: tabs, newlines, quotes, $, ; ...
safe_rest = $(if $(2),$(call safe_rest,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(subst $(safe_space),,$(1)))
safe_has_ctl = $(or $(findstring $(safe_nl),$(1)),$(findstring $(safe_tab),$(1)))

safe_user   = $(filter command line environment environment override,$(origin $(1)))
safe_cmd    = $(filter command line,$(origin $(1)))
safe_fixed  = $(eval override $(1) := $$(value $(1)))$(eval export $(1))
# the refusal names the value, its line breaks and tabs written \n, \r, \t so
# the message stays one line (the shell runs only here, on the way out)
safe_shown  = $(subst $(safe_nl),\n,$(subst $(safe_tab),\t,$(subst $(shell printf '\r'),\r,$(value $(1)))))
safe_refuse = $(error $(1)='$(safe_shown)': $(2); the value given has other characters)

SAFE_ALL := $(SAFE_NAMES) $(SAFE_FLAGS) $(SAFE_TEXT)
safe_given := $(sort $(foreach v,$(SAFE_ALL),$(if $(call safe_user,$(v)),$(v))) \
                     $(foreach v,$(.VARIABLES),$(if $(call safe_cmd,$(v)),$(v))))
$(foreach v,$(safe_given),$(call safe_fixed,$(v)))
$(foreach v,$(filter $(SAFE_NAMES),$(safe_given)),$(if $(call safe_rest,$(value $(v)),$(safe_chars)),\
  $(call safe_refuse,$(v),names use only letters$(safe_comma) digits and . _ -)))
$(foreach v,$(filter-out $(SAFE_NAMES) $(SAFE_TEXT),$(safe_given)),$(if $(call safe_rest,$(value $(v)),$(safe_flag_chars)),\
  $(call safe_refuse,$(v),flags use only letters$(safe_comma) digits$(safe_comma) blanks and . _ - / + = $(safe_comma) : @)))
$(foreach v,$(filter $(SAFE_TEXT),$(safe_given)),$(if $(call safe_has_ctl,$(value $(v))),\
  $(call safe_refuse,$(v),text without newlines or tabs)))
# undeclared environment variables holding a '$', their names plain
$(foreach v,$(.VARIABLES),$(if $(filter environment,$(origin $(v))),$(if $(findstring $$,$(value $(v))),\
  $(if $(call safe_rest,$(v),$(safe_chars)),,$(call safe_fixed,$(v))))))

# The models of MODEL=all: configs/models/NAME.yaml whose NAME passes (a
# name starting with '-' reads as an option); the others are named on stderr
# (their odd characters shown as '?') and skipped. The case patterns are
# written (PATTERN) so that make's parentheses stay balanced; once make
# restarts (after making plan.mk) the skipped names are not said again.
safe_model_files = $(shell export LC_ALL=C; for f in configs/models/*.yaml; do [ -f "$$f" ] || continue; \
  n=$${f#configs/models/}; n=$${n%.yaml}; case "$$n" in (''|-*|*[!A-Za-z0-9._-]*) \
  echo "validate: skipping configs/models/$$(printf '%s' "$$n" | tr -c 'A-Za-z0-9._-' '?').yaml: a model name uses only letters, digits and . _ -" >&2;; \
  (*) echo "$$n";; esac; done $(if $(MAKE_RESTARTS),2>/dev/null))

# The configs of MODEL=all that read build/real-models/ (a real model that
# tools/real-models/fetch.sh fetches), named on stderr: the Makefile skips
# them while build/real-models/.done is missing. Only names that pass above.
real_model_files = $(shell export LC_ALL=C; for f in configs/models/*.yaml; do \
  grep -q 'build/real-models/' "$$f" 2>/dev/null || continue; n=$${f#configs/models/}; n=$${n%.yaml}; case "$$n" in (''|-*|*[!A-Za-z0-9._-]*) ;; (*) echo "$$n"; \
  $(if $(MAKE_RESTARTS),,echo "validate: skipping configs/models/$$n.yaml: build/real-models/ not fetched (tools/real-models/fetch.sh)" >&2;) ;; esac; done)
endif
