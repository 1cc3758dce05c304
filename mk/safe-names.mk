# mk/safe-names.mk — names that reach make and the shell, checked before
# either sees them: the Makefile includes this before its validate rules.
# The alphabet is the one plan checks every name against (stages/plan/write.c):
# letters, digits and . _ -; anything else is refused.
ifndef SAFE_NAMES_MK
SAFE_NAMES_MK := 1

# The variables that reach plan.mk's rules and recipes. A value given on the
# command line or in the environment is taken as text ($(value)), never
# expanded: MODEL='$(shell ...)' runs nothing, it is refused below.
SAFE_VARS  := MODEL VARIANTS PRECISIONS THREADS JOBS CELL
safe_chars := A B C D E F G H I J K L M N O P Q R S T U V W X Y Z \
              a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9 . _ -
safe_empty :=
safe_space := $(safe_empty) $(safe_empty)
# what is left of $(1) once every allowed character (and the spaces between
# names) is taken out: tabs, newlines, quotes, $, ; ...
safe_rest = $(if $(2),$(call safe_rest,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(subst $(safe_space),,$(1)))

$(foreach v,$(SAFE_VARS),$(if $(filter command line environment environment override,$(origin $(v))),\
  $(eval override $(v) := $$(value $(v)))))
$(foreach v,$(SAFE_VARS),$(if $(call safe_rest,$(value $(v)),$(safe_chars)),\
  $(error $(v)='$(value $(v))': names use only letters, digits and . _ -)))

# The models of MODEL=all: configs/models/NAME.yaml whose NAME passes (a
# name starting with '-' reads as an option); the others are named on stderr
# (their odd characters shown as '?') and skipped. The case patterns are
# written (PATTERN) so that make's parentheses stay balanced; once make
# restarts (after making plan.mk) the skipped names are not said again.
safe_model_files = $(shell export LC_ALL=C; for f in configs/models/*.yaml; do [ -f "$$f" ] || continue; \
  n=$${f#configs/models/}; n=$${n%.yaml}; case "$$n" in (''|-*|*[!A-Za-z0-9._-]*) \
  echo "validate: skipping configs/models/$$(printf '%s' "$$n" | tr -c 'A-Za-z0-9._-' '?').yaml: a model name uses only letters, digits and . _ -" >&2;; \
  (*) echo "$$n";; esac; done $(if $(MAKE_RESTARTS),2>/dev/null))

endif
