# fix-precision (issue 20): the stage links plan's config reader.
$(O)/bin/fix-precision: $(O)/obj/stages/plan/model.o
