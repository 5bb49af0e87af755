// Package launch starts a multi-process job on this host the way torchrun
// does, for `hiercoll launch --nproc N [--nodes K] -- cmd args…` and for
// multi-process tests.
//
// Run starts Spec.NProc copies of Spec.Command. Each child gets the caller's
// environment plus the variables a torchrun rank sees (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and
// hiercoll's own (HIERCOLL_PORT and HIERCOLL_TOKEN for the bootstrap
// rendezvous, HIERCOLL_DEVICE for the GPU ordinal), so that a child only has
// to call bootstrap.FromEnv to join the others. HIERCOLL_TOKEN is a fresh
// secret for each job, 128 bits from crypto/rand, so the rendezvous admits
// only this job's ranks however many (emulated) nodes it spans. Spec.Nodes splits the ranks
// into emulated nodes, node-major (rank = node*LOCAL_WORLD_SIZE + local
// rank), each with its own NCCL_HOSTID, so that hierarchical code paths can
// be exercised on one machine.
//
// NVLink multicast must stay off on the project's machines: every child gets
// NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1 and
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1 unless the caller's environment already
// sets them, and Run never unsets or changes a value the caller set.
//
// Output flows line by line: every line a child writes to stdout or stderr
// reaches Spec.Stdout or Spec.Stderr whole, prefixed with "[rank R] ".
//
// Failure: when a child exits non-zero or dies of a signal, the others get
// SIGTERM and, Spec.Grace later, SIGKILL (each child leads its own process
// group, so whatever it started goes too). Run then returns a *RankError
// naming the first rank that failed and how. Cancelling the context ends the
// children the same way. Since the children are not in the caller's process
// group, a terminal's Ctrl-C reaches only the caller: a command should
// cancel the context on SIGINT and SIGTERM (signal.NotifyContext).
package launch
