# bench.mk — benchmark tools built from bench/*.c (not part of `make all`):
#   build/bench/kernels   the convolution and GEMM kernels alone on RT-DETR's
#                         640x640 shapes (bench/kernels.sh runs it in make bench)
BENCH_TOOLS := $(O)/bench/kernels
.PHONY: bench-tools
bench-tools: $(BENCH_TOOLS)
bench: bench-tools
$(O)/bench/%: $(O)/obj/bench/%.o $(LIBPARITY)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
