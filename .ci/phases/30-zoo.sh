# The model-zoo test's default subset (tests/zoo/, mk/zoo.mk): real exported
# architectures against ONNX Runtime.
make zoo
