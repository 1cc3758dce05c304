# fix-precision (issue 20): the fewest layers to keep in FP32.
#   make fix-precision MODEL=NAME PRECISION=fp16|bf16|tf32 [CRITERION=snr=40]
#        [FIXP_ARGS='--samples 8 --holdout 16 --max-evals 80']
# Outputs land in build/NAME/fix-precision/PRECISION/ (precision.yaml,
# model.onnx, trtexec.txt, report.json, report.md). The reference cell of
# the model's plan prepares the inputs (preprocessing for dataset configs).
# mk/safe-names.mk takes MODEL, PRECISION, CRITERION and FIXP_ARGS as text
# and checks them; the last two reach the command through the environment,
# never as make or shell syntax.
PRECISION ?= fp16

ifneq ($(filter fix-precision,$(MAKECMDGOALS)),)
export PRECISION CRITERION FIXP_ARGS
$(if $(filter-out 1,$(words $(PRECISION)))$(filter-out fp16 bf16 tf32,$(PRECISION)),$(error fix-precision: PRECISION must be fp16, bf16 or tf32))
$(if $(wildcard configs/models/$(MODEL).yaml),,$(error fix-precision: no configs/models/$(MODEL).yaml))
-include build/$(MODEL)/plan.mk
fix-precision: $(firstword $($(MODEL)_RESULTS_$($(MODEL)_REF))) $(O)/bin/fix-precision
	@echo '  FIXP    $(MODEL) $(PRECISION)'
	$(Q)$(O)/bin/fix-precision 'configs/models/$(MODEL).yaml' --precision "$$PRECISION" \
	  $${CRITERION:+--criterion "$$CRITERION"} $$FIXP_ARGS -o 'build/$(MODEL)/fix-precision/$(PRECISION)'
endif
.PHONY: fix-precision
