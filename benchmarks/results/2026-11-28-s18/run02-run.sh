#!/usr/bin/env bash
# s18 run02 (4 GPUs, the same machine as run01, called inline): gemm_fp8.py --scaling row on 4 ranks at main
# (build m) in three processes in a row, to see async-TP's fp8 op move between processes; then bench-mm (bf16,
# one GPU) m, sil, sil, m. Run as one command line; here as a script.
source scripts/gpu-env.sh; L=$OUT/logs; mkdir -p $L; date -u > $L/when.txt
for i in 1 2 3; do PYTHONPATH=$PWD/python HIERCOLL_LIB=$PWD/build/m/libhiercoll.so timeout 60 torchrun --nproc-per-node 4 benchmarks/torch/gemm_fp8.py --scaling row --rounds 3 --iters 10 > $L/rs4-row-$i.txt 2>&1; echo "rs4-row-$i rc=$?"; grep -E "^ +[0-9]+x|^[0-9]+x" $L/rs4-row-$i.txt | cut -c1-200; done
for x in m sil sil m; do CUDA_VISIBLE_DEVICES=0 timeout 80 build/$x/hiercoll bench-mm > $L/mm-$x-$SECONDS.txt 2>&1; echo "mm $x rc=$?"; done
cd $OUT && tar czf logs.tgz logs && rm -rf logs
