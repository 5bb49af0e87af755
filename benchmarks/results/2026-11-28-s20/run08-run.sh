#!/usr/bin/env bash
# s20 run08 (2 GPUs): hiercoll floors at 512 MiB and 1 GiB per transfer with build t (main at 5eb2b1f: the TMA
# bulk copies' rows beside the SM copies' and the copy engine's), the pair's NVLink.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
cat $L/when.txt
for b in 512m 1g; do
	bytes=536870912; [ $b = 1g ] && bytes=1073741824
	t0=$SECONDS; timeout 150 build/t/hiercoll floors --bytes $bytes > $L/floors-$b.txt 2>&1; echo "floors-$b rc=$? $((SECONDS-t0))s"
	grep -E 'TMA|SM peer|CE peer|SM local' $L/floors-$b.txt | cut -c1-120
done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
