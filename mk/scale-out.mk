# Sharded validation beyond one machine (docs/scale-out.md).
#
#   make validate MODEL=NAME SHARDS=N              N shards, here (LAUNCHER=local; -jK runs K at once)
#   make validate MODEL=NAME SHARDS=N LAUNCHER=slurm
#                            engines here, one Slurm job array (task I = shard I),
#                            a merge job after it; waits and reports (SLURM_WAIT=0: submit only)
#   make shard-NAME MODEL=NAME SHARDS=N SHARD=I    one shard (what an array task runs)
#   make shard-missing-NAME MODEL=NAME SHARDS=N    the shards not done (what a rerun resubmits)
#
# Slurm options: SLURM_PARTITION, SLURM_ACCOUNT, SLURM_TIME, SLURM_CPUS
# (cpus-per-task), SLURM_MAX_TASKS (array %K), SLURM_FLAGS (more sbatch
# flags, --name=value words); checked by pipeline/launchers/slurm.sh.
LAUNCHER ?= local
ifeq ($(filter local slurm,$(LAUNCHER)),)
$(error LAUNCHER='$(LAUNCHER)': local or slurm)
endif
export SLURM_PARTITION SLURM_ACCOUNT SLURM_TIME SLURM_CPUS SLURM_MAX_TASKS SLURM_FLAGS SLURM_WAIT VARIANTS PRECISIONS THREADS JOBS

ifeq ($(LAUNCHER),slurm)
$(if $(SHARDS),,$(error LAUNCHER=slurm: give SHARDS=N))
launch-slurm-%: $(BINS) FORCE
	$(Q)PARITY_BIN='$(PARITY_BIN)' pipeline/launchers/slurm.sh '$*' '$(SHARDS)'
endif
