// Package benchmarks holds the bodies of the jobs the README names, which
// hiercoll's command line runs on every rank: demo (one checked
// ReduceScatter2D and a short report), verify (the correctness sweep),
// bench (bus bandwidth beside NCCL's) and bench-gemm (GEMM +
// reduce-scatter, overlapped and not, beside GEMM + NCCL), and the small
// pieces they share: seeded inputs every rank can regenerate, the NCCL
// reference, tables and CSV. Lab probes live elsewhere (benchmarks/floors),
// the PNG plotter in internal/plot, torch's side of the comparisons in
// benchmarks/torch, and the logs of every run under results/, with
// RESULTS.md reading them.
//
// A job is a func(ctx, world.Rank) error: it runs once per goroutine rank of
// an in-process simulated world, or once in each process of a multi-process
// job. Rank 0 reports. The tuning knobs of the contexts a job makes come in
// their Configs (rs2d.Config.Tuning, gemmrs.Config.Tuning).
package benchmarks
