#!/usr/bin/env bash
# s20 run06 (4 GPUs, or one: then the local rows only): the TMA bulk copy (build t: main + kernels.LaunchBulkCopy and its floors rows): its GPU test,
# then hiercoll floors at 512 MiB and 1 GiB per transfer (SM copies, TMA bulk copies, copy engine) on 4 GPUs.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
cat $L/when.txt
run() { local name=$1 lim=$2; shift 2; [ $(left) -lt $((lim / 2)) ] && { echo "skip $name: $(left)s left"; return; }
	local t0=$SECONDS; timeout $lim "$@" > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
run t-bulk-gpu-test 120 env CUDA_VISIBLE_DEVICES=0 build/t/kernels.test -test.run 'Bulk' -test.v
grep -E '^(--- |ok|FAIL|PASS)|Error' $L/t-bulk-gpu-test.txt | head
run floors-512m 150 build/t/hiercoll floors
grep -E 'TMA|SM peer|CE peer|SM local|CE local' $L/floors-512m.txt | cut -c1-120
run floors-1g 150 build/t/hiercoll floors --bytes 1073741824
grep -E 'TMA|SM peer write|CE peer copy' $L/floors-1g.txt | cut -c1-120
cd $OUT && tar czf logs.tgz logs && rm -rf logs
