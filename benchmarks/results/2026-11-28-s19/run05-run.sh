#!/usr/bin/env bash
# s19 run05 (2 GPUs, asked for H100s): issue 30's 2-GPU set at main (m, c1d27c6 = the library of b54737d) on
# another card: bench zero copy twice, registered, plain (1 MiB - 2 GiB); verify of the default and pull engines;
# check_rs.py on 2 ranks; bench-gemm --gemm own at the seven shapes; gemm_baseline.py --hiercoll in two processes.
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
left() { echo $((590 - SECONDS)); }
H=build/m/hiercoll
export HIERCOLL_LIB=$PWD/build/m/libhiercoll.so PYTHONPATH=$PWD/python
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
nvidia-smi topo -m >> $L/when.txt 2>&1
cat $L/when.txt
sizes=1M,4M,8M,16M,32M,64M,128M,512M,1G,2G
run() { local name=$1 lim=$2; shift 2; [ $(left) -lt $((lim / 2)) ] && { echo "skip $name: $(left)s left"; return; }
	local t0=$SECONDS; timeout $lim "$@" > $L/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t0))s"; }
run verify 60 $H verify --repeat 20; tail -2 $L/verify.txt
run zc-1 80 $H bench --sizes $sizes --csv $L/zc-1.csv; grep -E '^ +[0-9]+ ' $L/zc-1.txt | cut -c1-150
run reg 80 $H bench --sizes $sizes --register; grep -E '^ +[0-9]+ ' $L/reg.txt | awk '{print $1, $NF, $(NF-4)}' | head -12
run plain 80 $H bench --sizes $sizes --copy-in; grep -E '^ +[0-9]+ ' $L/plain.txt | awk '{print $1, $(NF-4)}' | head -12
run zc-2 80 $H bench --sizes $sizes; grep -E '^ +[0-9]+ ' $L/zc-2.txt | awk '{print $1, $(NF-4)}' | head -12
run seven 150 $H bench-gemm --gemm own --shapes 8192x8192x28672,8192x8192x8192,4096x8192x28672,16384x4096x14336,8192x5120x13824,4096x8192x8192,2048x8192x28672
grep -E '^[0-9]+x[0-9]+x[0-9]+ |by round' $L/seven.txt | cut -c1-200
run check-rs 120 torchrun --nproc-per-node 2 benchmarks/torch/check_rs.py --engine pull --dtypes bf16 --rounds 3 --shapes 4096x4096,16384x4096,65536x4096,131072x4096,262144x4096
tail -12 $L/check-rs.txt | cut -c1-200
for i in 1 2; do run torch-$i 100 torchrun --nproc-per-node 2 benchmarks/torch/gemm_baseline.py --hiercoll; grep -E '^ +[0-9]+x' $L/torch-$i.txt | cut -c1-160; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
