#!/bin/bash
# LAUNCHER=slurm against a real Slurm (Debian's slurmctld, slurmd, munge):
# a single-node cluster on localhost with 2 CPUs, started inside this test's
# own temporary folder (its own munge key and socket, its own slurm.conf on
# unusual localhost ports, state and spool in the folder), runs rtdetr-mini
# with SHARDS=3: the merged reports equal the unsharded local run's; an array
# task cancelled on purpose is reported by name, the merge does not run, and
# a rerun resubmits that shard alone and completes. Skipped (as a TAP skip,
# with the reason) where the packages are missing or daemons cannot start.
cd "$(dirname "$0")/../.." || exit 2
skip() { echo "1..0 # SKIP $*"; exit 0; }
for c in munged mungekey slurmctld slurmd sbatch squeue scancel; do
    command -v $c >/dev/null 2>&1 || [ -x /usr/sbin/$c ] || skip "$c not installed (Debian: slurmctld slurmd slurm-client munge; tools/deps.sh installs them)"
done
PATH=$PATH:/usr/sbin
n=0; failed=0
ok() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed+1)); fi; }
M=rtdetr-mini D=build/rtdetr-mini R=reports/rtdetr-mini
tmp=$(mktemp -d /tmp/parity-slurm-XXXXXX)
chmod 700 "$tmp"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.3; done; kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p build && exec 9>build/.$M.lock && flock 9   # tests/e2e/shard_local.t uses the same folders

# munge: own key, socket, pid, log, seed
mkdir -p "$tmp/munge" && chmod 700 "$tmp/munge"
mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null 2>&1 || dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.socket
munged --force --foreground --key-file="$tmp/munge/munge.key" --socket="$sock" --pid-file="$tmp/munge/munged.pid" \
    --log-file="$tmp/munge/munged.log" --seed-file="$tmp/munge/munged.seed" > "$tmp/munge/out.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || skip "munged did not start: $(tail -1 "$tmp/munge/out.log" "$tmp/munge/munged.log" 2>/dev/null | tr '\n' ' ')"

# slurm: one node of 2 CPUs, ports chosen from the test's pid in 20000..29999
host=$(hostname -s)
port=$((20000 + ($$ % 4999) * 2))
mkdir -p "$tmp/state" "$tmp/spool"
cat > "$tmp/slurm.conf" <<CONF
ClusterName=parity-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SchedulerParameters=defer_batch
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -D -i -f "$tmp/slurm.conf" > "$tmp/ctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$tmp/slurm.conf" -N "$host" > "$tmp/slurmd.out" 2>&1 &
pids+=($!)
up=
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q '^idle' && { up=1; break; }; sleep 0.5; done
[ -n "$up" ] || skip "single-node Slurm did not come up: $(tail -2 "$tmp/slurmctld.log" "$tmp/slurmd.log" 2>/dev/null | tr '\n' ' ')"
echo "# slurm up on $host:$port ($(sinfo -h -o '%P %c CPUs %t'))"

. tests/e2e/same_reports.sh   # mask, same_reports

# 1. the local, unsharded run: the reference
rm -rf $D $R
make -s validate MODEL=$M > "$tmp/one.log" 2>&1; rc=$?
ok $([ $rc = 0 ]; echo $?) "local unsharded run (rc $rc)"
cp -r $R "$tmp/one"

# 2. through Slurm, 3 shards; nothing reused but the engines
rm -rf $D/pre/*.done $D/pre/rtdetr-official $D/pre/bgr $D/cells $D/shards $R
SLURM_POLL=1 make -s validate MODEL=$M SHARDS=3 LAUNCHER=slurm SLURM_MAX_TASKS=2 SLURM_TIME=10:00 > "$tmp/slurm.log" 2>&1; rc=$?
sed 's/^/# /' "$tmp/slurm.log"
ok $([ $rc = 0 ] && grep -q 'job array' "$tmp/slurm.log" && grep -q 'merge job' "$tmp/slurm.log"; echo $?) "LAUNCHER=slurm SHARDS=3 runs an array and a merge job (rc $rc)"
ok $(for i in 0 1 2; do grep -q 'INFER' $D/shards/3/logs/shard-$i.log || exit 1; done; echo 0) "each array task ran its shard (logs shard-0..2.log)"
same_reports "$tmp/one" $R; ok $? "merged results.json, summary.md, junit.xml equal the local run's (timings aside)"

# 3. a cancelled task: reported by name, no merge, the rerun resubmits it alone
rm -rf $D/shards/3/1 $R
cat > "$tmp/cancel.sh" <<'SH'
#!/bin/bash
# cancels array task 1 as soon as it is running
for _ in $(seq 600); do
    j=$(squeue -h -r -t R -o '%i' -n parity-rtdetr-mini 2>/dev/null | grep '_1$' | head -1)
    [ -n "$j" ] && { scancel "$j"; echo "cancelled $j"; exit 0; }
    sleep 0.2
done
SH
chmod +x "$tmp/cancel.sh"
"$tmp/cancel.sh" > "$tmp/cancel.log" 2>&1 &
cpid=$!
SLURM_POLL=1 make -s validate MODEL=$M SHARDS=3 LAUNCHER=slurm > "$tmp/fault.log" 2>&1; rc=$?
wait $cpid
sed 's/^/# /' "$tmp/cancel.log" "$tmp/fault.log"
ok $([ $rc != 0 ] && grep -q 'shard 1 of 3 failed or was cancelled.*shard-1.log' "$tmp/fault.log"; echo $?) "the cancelled task is reported by shard and log (rc $rc)"
ok $([ ! -e $R/results.json ] && grep -q 'merge not run' "$tmp/fault.log"; echo $?) "the merge did not run on partial data"
SLURM_POLL=1 make -s validate MODEL=$M SHARDS=3 LAUNCHER=slurm > "$tmp/rerun.log" 2>&1; rc=$?
sed 's/^/# /' "$tmp/rerun.log"
ok $([ $rc = 0 ] && grep -q 'shards 1 of 3' "$tmp/rerun.log"; echo $?) "the rerun resubmits shard 1 alone and completes (rc $rc)"
same_reports "$tmp/one" $R; ok $? "its reports equal the local run's"

# 4. Slurm options are values, never syntax
SLURM_PARTITION='test;touch x' make -s validate MODEL=$M SHARDS=3 LAUNCHER=slurm > "$tmp/bad.log" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "SLURM_PARTITION='test;touch x'" "$tmp/bad.log" && [ ! -e x ]; echo $?) "a partition with shell syntax is refused"
SLURM_FLAGS='--comment=$(id)' make -s validate MODEL=$M SHARDS=3 LAUNCHER=slurm > "$tmp/bad.log" 2>&1; rc=$?
ok $([ $rc != 0 ] && grep -q "SLURM_FLAGS" "$tmp/bad.log"; echo $?) "a flag with shell syntax is refused"

echo "1..$n"
exit $((failed > 0))
