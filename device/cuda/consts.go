package cuda

// Values from the CUDA driver API (cuda.h), which this package does not
// include. Each was checked against NVIDIA's documentation or a public
// transcription of cuda.h (cudaTypedefs.h for the ABI versions); doc.go lists
// the sources.

// CUresult codes this package treats specially.
const (
	cudaSuccess                      result = 0
	cudaErrorInvalidValue            result = 1
	cudaErrorOutOfMemory             result = 2
	cudaErrorStubLibrary             result = 34
	cudaErrorCallRequiresNewerDriver result = 36
	cudaErrorNoDevice                result = 100
	cudaErrorInvalidDevice           result = 101
	cudaErrorInvalidHandle           result = 400
	cudaErrorIllegalState            result = 401
	cudaErrorNotReady                result = 600 // cuStreamQuery / cuEventQuery: work still pending
	cudaErrorNotPermitted            result = 800
	cudaErrorNotSupported            result = 801
	cudaErrorSystemDriverMismatch    result = 803
	cudaErrorCompatNotSupported      result = 804
	cudaErrorTimeout                 result = 909
)

// Flags.
const (
	getProcAddressDefault  = 0   // CU_GET_PROC_ADDRESS_DEFAULT (legacy default-stream variants)
	procAddressSuccess     = 0   // CU_GET_PROC_ADDRESS_SUCCESS (CUdriverProcAddressQueryResult)
	streamNonBlocking      = 0x1 // CU_STREAM_NON_BLOCKING
	eventDefault           = 0x0 // CU_EVENT_DEFAULT: timing enabled
	eventDisableTiming     = 0x2 // CU_EVENT_DISABLE_TIMING
	ipcMemLazyEnablePeer   = 0x1 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	writeValueDefault      = 0x0 // CU_STREAM_WRITE_VALUE_DEFAULT: keeps the memory barrier
	ipcHandleSize          = 64  // CU_IPC_HANDLE_SIZE: sizeof(CUipcMemHandle)
	captureStatusNone      = 0   // CU_STREAM_CAPTURE_STATUS_NONE (ACTIVE 1, INVALIDATED 2)
	captureModeThreadLocal = 1   // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL (GLOBAL 0, RELAXED 2)
)

// CUdevice_attribute values.
const (
	attrMultiprocessorCount       = 16
	attrL2CacheSize               = 38
	attrAsyncEngineCount          = 40
	attrUnifiedAddressing         = 41
	attrComputeCapabilityMajor    = 75
	attrComputeCapabilityMinor    = 76
	attrStreamPrioritiesSupported = 78
	attrCanUseStreamMemOpsV1      = 92 // deprecated; reads 0 on H200 although the _v2 memory ops work
	attrVirtualMemoryManagement   = 102
	attrHandleTypePosixFD         = 103
	attrMemoryPoolsSupported      = 115
	attrGPUDirectRDMASupported    = 116
	attrCanUse64BitStreamMemOps   = 122
	attrIPCEventSupported         = 125
	attrHandleTypeFabricSupported = 128
	attrMulticastSupported        = 132 // MULTICAST_SUPPORTED: one of device.AllowMulticast's conditions
)

// CUdevice_P2PAttribute values.
const (
	p2pPerformanceRank       = 1
	p2pAccessSupported       = 2
	p2pNativeAtomicSupported = 3
)

// ABI versions asked of cuGetProcAddress_v2, per family (cudaTypedefs.h).
const (
	abiBase        = 2000  // cuInit, cuDeviceGet*, cuStreamQuery, cuEvent*, cuModule*
	abiMemory      = 3020  // the _v2 64-bit memory calls: cuMemAlloc_v2, cuMemcpy*_v2, ...
	abiV4          = 4000  // cuStreamDestroy_v2, cuEventDestroy_v2, cuLaunchKernel, cuCtx{Get,Set}Current, cuMemcpyAsync
	abiIPC         = 4010  // cuIpcGetMemHandle, cuIpcCloseMemHandle, cuDeviceGetPCIBusId
	abiPriority    = 5050  // cuStreamCreateWithPriority, cuCtxGetStreamPriorityRange
	abiErrors      = 6000  // cuGetErrorName, cuGetErrorString
	abiPrimaryCtx  = 7000  // cuDevicePrimaryCtxRetain
	abiP2PAttr     = 8000  // cuDeviceGetP2PAttribute
	abiV11         = 11000 // cuIpcOpenMemHandle_v2, cuDevicePrimaryCtxRelease_v2
	abiFuncAttr    = 9000  // cuFuncSetAttribute
	abiTensorMap   = 12000 // cuTensorMapEncodeTiled
	abiStreamMemOp = 11070 // cuStreamWaitValue32_v2, cuStreamWriteValue32_v2
	abiGraphs      = 10000 // cuStreamIsCapturing, cuStreamEndCapture, cuGraphLaunch, cuGraph{Exec,}Destroy
	abiCaptureMode = 10010 // cuStreamBeginCapture_v2 (with a capture mode)
	abiGraphFlags  = 11040 // cuGraphInstantiateWithFlags
	abiElapsedV2   = 12080 // cuEventElapsedTime_v2
	abiVMM         = 10020 // cuMemCreate, cuMemMap, cuMemSetAccess, cuMem{Export,Import}*ShareableHandle, ...
	abiMulticast   = 12010 // cuMulticastCreate, cuMulticastAddDevice, cuMulticastBindMem, cuMulticastUnbind, cuMulticastGetGranularity
)

// Kernel attributes, tensor maps.
const (
	funcAttrNumRegs          = 4        // CU_FUNC_ATTRIBUTE_NUM_REGS
	funcAttrLocalBytes       = 3        // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
	funcAttrMaxDynamicShared = 8        // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	defaultSharedLimit       = 48 << 10 // dynamic shared memory a kernel gets without asking
	tensorMapSize            = 128
	tensorMapUint8           = 0 // CU_TENSOR_MAP_DATA_TYPE_UINT8
	tensorMapFloat16         = 6 // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
	tensorMapBFloat16        = 9 // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	tensorMapSwizzle128B     = 3 // CU_TENSOR_MAP_SWIZZLE_128B
	tensorMapL2Promotion256B = 3 // CU_TENSOR_MAP_L2_PROMOTION_L2_256B
)
