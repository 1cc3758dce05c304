# The task fixtures (issue 35): one tiny generated model per task family,
# with inputs and ground truth (tests/fixtures/tasks/make_fixture.py, fixed
# seeds), in build/models/task_FAMILY/; configs/models/task-FAMILY.yaml
# validates each. A folder appears only when complete.
TASK_FIXTURES := classification segmentation restoration
models: $(TASK_FIXTURES:%=$(BUILD)/models/task_%/.done)
$(BUILD)/models/task_%/.done: tests/fixtures/tasks/make_fixture.py | $(DEPS_OK)
	@echo "  MODEL   task_$*"
	$(Q)rm -rf $(BUILD)/models/task_$*.tmp
	$(Q)$(PYTHON) tests/fixtures/tasks/make_fixture.py '$*' $(BUILD)/models/task_$*.tmp
	$(Q)touch $(BUILD)/models/task_$*.tmp/.done && rm -rf $(BUILD)/models/task_$* && mv $(BUILD)/models/task_$*.tmp $(BUILD)/models/task_$*
