# bench.mk — benchmark tools built from bench/*.c (not part of `make all`):
#   build/bench/kernels   the convolution and GEMM kernels alone on RT-DETR's
#                         640x640 shapes (bench/kernels.sh runs it in make bench)
#   build/bench/engines_ab  two engines timed in turn in one process (kernel A/B)
#   build/bench/fma_peak  the float32 FMA peak per core (registers only): the floor under any engine
BENCH_TOOLS := $(O)/bench/kernels $(O)/bench/engines_ab $(O)/bench/fma_peak
.PHONY: bench-tools
bench-tools: $(BENCH_TOOLS)
bench: bench-tools
$(O)/bench/%: $(O)/obj/bench/%.o $(LIBPARITY)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
