# zoo.mk — the model-zoo test (tests/zoo/): real torchvision, timm and
# transformers graphs, weights generated at test time, parity's FP32 engine
# against ONNX Runtime.
#   make zoo              the default subset (a few minutes on 2 cores)
#   make zoo ZOO=full     every model in tests/zoo/graphs.tar.xz
#   make zoo ZOO_FILTER=regex
# Both reach zoo.py through the environment, never through the shell line.
ZOO ?= default
ZOO_FILTER ?=
export ZOO ZOO_FILTER
.PHONY: zoo
zoo: all
	PARITY_BIN="$(CURDIR)/$(O)/bin" /usr/bin/python3 tests/zoo/zoo.py
