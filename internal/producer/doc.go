// Package producer is the own GEMM as the producer of an rs2d context's
// overlapped calls: Producer launches it with its segment tables and
// counters, Overlapped is the one place that enqueues an overlapped GEMM +
// reduce-scatter (the producer, the push after the GEMM, the scatter), for
// gemmrs's calls and the C ABI's; HelpRows sizes that push, SegmentsFor the
// signal segments, SequentialConfig the context of the small products,
// which go GEMM then reduce-scatter.
package producer
