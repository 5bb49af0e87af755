package kernels

import _ "embed"

// peerSource is what the reduce, push-reduce and ring kernels share (element
// types; for the last two, which move rows between GPUs' memory, system-scope
// loads, stores and atomics); NVRTC compiles each module alone, so it is
// prepended to each one's source.
//
//go:embed cuda/peer.cuh
var peerSource string

// PeerPrelude returns the prelude for an engine's kernel module kept in its
// own folder: prepend it to the module's source.
func PeerPrelude() string { return peerSource }
