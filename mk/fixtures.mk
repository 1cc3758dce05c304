# fixtures.mk — task-metric fixture models generated at build time
# (tests/fixtures/NAME/make_*.py: python3-onnx and Pillow, fixed seeds, the
# same bytes every run) into build/models/NAME/ with the dataset they are
# judged on, never committed; `make models` (and so `make test`) builds them.
# The folder appears only when complete.
#   yolo_tiny   YOLOv8-style raw head + letterboxed shapes (configs/models/yolo-tiny.yaml)
models: $(BUILD)/models/yolo_tiny/.done
$(BUILD)/models/yolo_tiny/.done: tests/fixtures/yolo-tiny/make_yolo_tiny.py models/reproducers/common.py | $(DEPS_OK)
	@echo "  MODEL   yolo_tiny"
	$(Q)rm -rf $(BUILD)/models/yolo_tiny.tmp && mkdir -p $(BUILD)/models/yolo_tiny.tmp
	$(Q)$(PYTHON) tests/fixtures/yolo-tiny/make_yolo_tiny.py $(CURDIR)/$(BUILD)/models/yolo_tiny.tmp
	$(Q)touch $(BUILD)/models/yolo_tiny.tmp/.done && rm -rf $(BUILD)/models/yolo_tiny && mv $(BUILD)/models/yolo_tiny.tmp $(BUILD)/models/yolo_tiny
