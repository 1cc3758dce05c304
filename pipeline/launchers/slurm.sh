#!/bin/bash
# slurm.sh — runs a sharded validation (docs/scale-out.md) on a Slurm cluster:
# the engines once here, one job array whose task I runs shard I through make
# (make shard-MODEL SHARDS=N SHARD=I), and a merge job after the whole array
# (--dependency=afterok) that runs map-eval, compare and report over the union
# (make validate-MODEL PARITY_SHARD_MERGE=1: a missing shard is an error there,
# never run there). Submits only the shards make says are missing or stale, so
# a rerun after a failed or cancelled task resubmits just those.
#
#   slurm.sh MODEL SHARDS      submit (and with SLURM_WAIT=1, wait and report)
#   slurm.sh --task MODEL SHARDS / --merge MODEL SHARDS   (what the jobs run)
#
# Options come from the environment (make exports them): SLURM_PARTITION,
# SLURM_ACCOUNT, SLURM_TIME, SLURM_CPUS (cpus-per-task), SLURM_MAX_TASKS (the
# array's %K), SLURM_FLAGS (more sbatch flags, split on blanks), SLURM_WAIT;
# VARIANTS, PRECISIONS, THREADS, JOBS pass on to make. Each is checked against
# a strict alphabet and reaches sbatch and make as its own argv word: nothing
# here is ever evaluated by a shell. Another array scheduler is a copy of this
# file with its own submit and wait steps.
set -u -f   # -f: words split on blanks are never globbed
die() { echo "slurm.sh: $*" >&2; exit 2; }
# letters, digits and . _ - / + : , = @ only, not starting with '-'
check() { [[ $2 =~ ^[A-Za-z0-9._/+:,=@][A-Za-z0-9._/+:,=@-]*$ ]] || die "$1='$2': use only letters, digits and . _ - / + : , = @"; }
checknum() { [[ $2 =~ ^[1-9][0-9]{0,3}$ ]] || die "$1='$2': give a number 1..9999"; }

mode=submit
case "${1:-}" in --task) mode=task; shift;; --merge) mode=merge; shift;; esac
[ $# = 2 ] || die "usage: slurm.sh [--task|--merge] MODEL SHARDS"
model=$1 shards=$2
check MODEL "$model"; checknum SHARDS "$shards"
MAKE=${MAKE:-make}
makevars=(MODEL="$model" SHARDS="$shards")
for v in VARIANTS PRECISIONS THREADS JOBS; do
    val=${!v:-}
    [ -z "$val" ] && continue
    for w in $val; do check "$v" "$w"; done
    makevars+=("$v=$val")
done

case $mode in
task)
    i=${SLURM_ARRAY_TASK_ID:?slurm.sh --task runs as a Slurm array task}
    # the task's cells run side by side on the CPUs Slurm gave it
    exec "$MAKE" -s -j"${SLURM_CPUS_PER_TASK:-1}" "shard-$model" "${makevars[@]}" SHARD="$i";;
merge)
    exec "$MAKE" -s "validate-$model" "${makevars[@]}" PARITY_SHARD_MERGE=1;;
esac

opts=()
[ -n "${SLURM_PARTITION:-}" ] && { check SLURM_PARTITION "$SLURM_PARTITION"; opts+=(--partition="$SLURM_PARTITION"); }
[ -n "${SLURM_ACCOUNT:-}" ] && { check SLURM_ACCOUNT "$SLURM_ACCOUNT"; opts+=(--account="$SLURM_ACCOUNT"); }
[ -n "${SLURM_TIME:-}" ] && { check SLURM_TIME "$SLURM_TIME"; opts+=(--time="$SLURM_TIME"); }
[ -n "${SLURM_CPUS:-}" ] && { checknum SLURM_CPUS "$SLURM_CPUS"; opts+=(--cpus-per-task="$SLURM_CPUS"); }
for w in ${SLURM_FLAGS:-}; do
    [[ $w == -* ]] || die "SLURM_FLAGS: '$w' is not a flag (write --name=value)"
    f=${w#-}; check SLURM_FLAGS "${f#-}"; opts+=("$w")
done
cap=
[ -n "${SLURM_MAX_TASKS:-}" ] && { checknum SLURM_MAX_TASKS "$SLURM_MAX_TASKS"; cap=%$SLURM_MAX_TASKS; }
for c in sbatch squeue; do command -v $c >/dev/null || die "$c not found: LAUNCHER=slurm runs on a Slurm submit host"; done

dir=build/$model/shards/$shards
logs=$dir/logs
mkdir -p "$logs" || exit 2
echo "  SLURM   $model: engines and inputs, once"
"$MAKE" -s "shard-prepare-$model" "${makevars[@]}" || exit 2
missing=$("$MAKE" -s "shard-missing-$model" "${makevars[@]}") || exit 2
missing=$(echo $missing | tr ' ' ',')
self=$(realpath "$0")
# the jobs get this environment (sbatch --export=ALL) but not the calling
# make's flags and jobserver: they run make afresh with makevars
unset MAKEFLAGS MFLAGS MAKELEVEL
deps=()
if [ -n "$missing" ]; then
    array=$(sbatch --parsable "${opts[@]}" --job-name="parity-$model" --array="$missing$cap" \
            --output="$logs/shard-%a.log" --chdir="$PWD" "$self" --task "$model" "$shards") || die "sbatch refused the array"
    array=${array%%;*}
    echo "  SLURM   $model: shards $missing of $shards: job array $array (logs: $logs/shard-I.log)"
    deps=(--dependency="afterok:$array" --kill-on-invalid-dep=yes)
else
    echo "  SLURM   $model: every shard of $shards is done"
fi
merge=$(sbatch --parsable "${opts[@]}" "${deps[@]}" --job-name="parity-$model-merge" --output="$logs/merge.log" \
        --chdir="$PWD" "$self" --merge "$model" "$shards") || die "sbatch refused the merge job"
merge=${merge%%;*}
echo "  SLURM   $model: merge job $merge after the array (log: $logs/merge.log)"
printf 'array %s\nmerge %s\n' "${array:-none}" "$merge" > "$dir/slurm.jobs"
[ "${SLURM_WAIT:-1}" = 1 ] || { echo "  SLURM   $model: submitted; rerun the same command to resubmit what failed"; exit 0; }

# wait for both, then say what happened: a shard that did not finish is named
# with its log, and the merge (cancelled by Slurm: its dependency failed) is
# reported as not run
while [ -n "$(squeue -h -o %i -j "${array:+$array,}$merge" 2>/dev/null)" ]; do sleep "${SLURM_POLL:-2}"; done
missing=$("$MAKE" -s "shard-missing-$model" "${makevars[@]}")
if [ -n "$missing" ]; then
    for i in $missing; do
        echo "slurm.sh: $model: shard $i of $shards failed or was cancelled (job ${array:-?}_$i, log $logs/shard-$i.log)" >&2
        [ -f "$logs/shard-$i.log" ] && tail -n 3 "$logs/shard-$i.log" | sed 's/^/    /' >&2
    done
    echo "slurm.sh: $model: merge not run (no merge on partial data); rerun to resubmit shard(s) $(echo $missing)" >&2
    exit 1
fi
if ! grep -q "validate: $model:" "$logs/merge.log" 2>/dev/null; then
    echo "slurm.sh: $model: the merge job $merge failed (log $logs/merge.log)" >&2
    [ -f "$logs/merge.log" ] && tail -n 5 "$logs/merge.log" | sed 's/^/    /' >&2
    exit 1
fi
grep "validate: $model:" "$logs/merge.log"
# like make validate: a FAIL verdict is exit 1
"${PARITY_BIN:-build/bin}/report" --verdict "reports/$model/results.json" >/dev/null
