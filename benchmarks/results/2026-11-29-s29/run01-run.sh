#!/usr/bin/env bash
# s29 run01 (one H200): Nsight Compute, clocks free-running (--clock-control none), the own fp8 GEMM's row-wise and
# per-tensor kernels beside cuBLAS's (torch._scaled_mm, fast accumulation and promoted) at 4096x8192x2048 and
# 8192x8192x7168: elapsed cycles, SM clock, tensor pipe and issue activity — is cuBLAS's row-wise lead at short K
# a higher clock or a busier tensor pipe?
set -uo pipefail
source scripts/gpu-env.sh
L=$OUT/logs; mkdir -p $L
date -u +"run at %Y-%m-%dT%H:%M:%SZ" > $L/when.txt
nvidia-smi --query-gpu=index,name,memory.total,driver_version,power.limit --format=csv >> $L/when.txt 2>&1
export PYTHONPATH=$PWD/python RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517
export HIERCOLL_LIB=$PWD/build/m/libhiercoll.so
ncu --query-metrics 2>/dev/null | grep -i -E "gmma|pipe_tensor" > $L/metrics-available.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed
for g in sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed sm__inst_executed_pipe_tensor_op_gmma.sum; do
	grep -q "${g%%.*}" $L/metrics-available.txt && M=$M,$g
done
echo "metrics: $M" | tee $L/metrics-used.txt
for sc in row tensor; do for sh in 4096x8192x2048 8192x8192x7168; do t0=$SECONDS
	timeout 200 ncu --clock-control none --kernel-name regex:"hc_gemm_e4m3|nvjet_sm90_qq" --launch-skip 16 --launch-count 20 --metrics $M --csv \
		python3 benchmarks/torch/gemm_fp8.py --scaling $sc --shapes $sh --rounds 3 --iters 2 > $L/ncu-$sc-$sh.csv 2> $L/ncu-$sc-$sh.err
	echo "$sc $sh rc=$? $((SECONDS-t0))s"
done; done
python3 - $L <<'PY'
import csv, sys, glob, collections, os
for f in sorted(glob.glob(sys.argv[1] + "/ncu-*.csv")):
    rows = [r for r in csv.reader(l for l in open(f) if l.startswith('"'))]
    if not rows: print(os.path.basename(f), "no rows"); continue
    h = rows[0]; ki, mi, vi = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value")
    agg = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows[1:]:
        try: agg[r[ki][:60]][r[mi]].append(float(r[vi].replace(",", "")))
        except ValueError: pass
    print(os.path.basename(f))
    for k, ms in agg.items():
        med = {m: sorted(v)[len(v)//2] for m, v in ms.items()}
        print("  %-60s n=%d " % (k, len(next(iter(ms.values())))) + " ".join("%s=%.4g" % (m.split("__")[1][:28], v) for m, v in sorted(med.items())))
PY
cd $OUT && tar czf logs.tgz logs && rm -rf logs
