package kernels

import _ "embed"

// PeerSource is what the reduce, push-reduce and ring kernels share (element
// types; for the last two, which move rows between GPUs' memory, system-scope
// loads, stores and atomics); NVRTC compiles each module alone, so it is
// prepended to each one's source.
//
//go:embed cuda/peer.cuh
var PeerSource string
