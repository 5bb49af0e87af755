package kernels

import _ "embed"

// peerSource is what the kernels that move rows between GPUs' memory share
// (push-reduce and ring: element types, system-scope loads, stores and
// atomics); NVRTC compiles each module alone, so it is prepended to each
// one's source.
//
//go:embed cuda/peer.cuh
var peerSource string
