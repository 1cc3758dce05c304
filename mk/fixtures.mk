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
#   yolo_seg_tiny, yolo_pose_tiny   yolo_tiny with a YOLOv8-seg / -pose head and masks /
#               keypoints in the ground truth (configs/models/yolo-seg-tiny.yaml, yolo-pose-tiny.yaml)
models: $(BUILD)/models/yolo_seg_tiny/.done $(BUILD)/models/yolo_pose_tiny/.done
$(BUILD)/models/yolo_%_tiny/.done: tests/fixtures/yolo-task-tiny/make_yolo_task_tiny.py tests/fixtures/yolo-tiny/make_yolo_tiny.py models/reproducers/common.py | $(DEPS_OK)
	@echo "  MODEL   yolo_$*_tiny"
	$(Q)rm -rf $(BUILD)/models/yolo_$*_tiny.tmp && mkdir -p $(BUILD)/models/yolo_$*_tiny.tmp
	$(Q)$(PYTHON) tests/fixtures/yolo-task-tiny/make_yolo_task_tiny.py $* $(CURDIR)/$(BUILD)/models/yolo_$*_tiny.tmp
	$(Q)touch $(BUILD)/models/yolo_$*_tiny.tmp/.done && rm -rf $(BUILD)/models/yolo_$*_tiny && mv $(BUILD)/models/yolo_$*_tiny.tmp $(BUILD)/models/yolo_$*_tiny
