# reduce (issue 40): the smallest subgraph of MODEL that still fails CELL's check.
#   make reduce MODEL=NAME CELL=VARIANT__PRECISION
# Outputs land in build/NAME/reduce/CELL/ (model.onnx, inputs/, reference/,
# precision.yaml, repro.md, report.json; docs/reduce.md). MODEL and CELL are
# checked by mk/safe-names.mk (letters, digits, . _ -); reduce itself refuses
# a cell the plan does not list. The reference cell's dump is made first;
# a cell of another variant needs its preprocessed inputs (make validate).
ifneq ($(filter reduce,$(MAKECMDGOALS)),)
$(if $(CELL),,$(error reduce: give CELL=VARIANT__PRECISION, a cell of configs/models/$(MODEL).yaml's matrix))
$(if $(wildcard configs/models/$(MODEL).yaml),,$(error reduce: no configs/models/$(MODEL).yaml))
-include build/$(MODEL)/plan.mk
reduce: build/$(MODEL)/cells/$($(MODEL)_REF)/dump.done $(O)/bin/reduce
	@echo '  REDUCE  $(MODEL) $(CELL)'
	$(Q)$(O)/bin/reduce --plan 'build/$(MODEL)/plan.json' --cell '$(CELL)' -o 'build/$(MODEL)/reduce/$(CELL)'
endif
.PHONY: reduce
