package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// DimUnknown marks an unknown dim size (OF_DIM_UNKNOWN) in a graph input's dims; it prints as "?".
const DimUnknown int64 = C.OF_DIM_UNKNOWN

// Device types (DLPack's DLDeviceType values).
const (
	DeviceCPU  int32 = C.OF_DEVICE_CPU
	DeviceCUDA int32 = C.OF_DEVICE_CUDA
)

// HeaderVersion is the version of the header this package was built against; HeaderABIVersion its ABI.
const (
	HeaderVersionMajor = C.OF_VERSION_MAJOR
	HeaderVersionMinor = C.OF_VERSION_MINOR
	HeaderVersionPatch = C.OF_VERSION_PATCH
	HeaderABIVersion   = C.OF_ABI_VERSION
)

// DimIsKnown reports a concrete size (>= 0).
func DimIsKnown(d int64) bool { return C.of_dim_is_known(C.int64_t(d)) != 0 }

// DimIsSymbol reports a named symbol (Session.DimSymbol).
func DimIsSymbol(d int64) bool { return C.of_dim_is_symbol(C.int64_t(d)) != 0 }

// DimSymbolName is the name of a named symbol (INVALID_ARGUMENT for other dims).
func DimSymbolName(d int64) (string, error) {
	var name *C.char
	var n C.size_t
	if err := statusError(C.of_dim_symbol_name(C.int64_t(d), &name, &n)); err != nil {
		return "", err
	}
	return C.GoStringN(name, C.int(n)), nil
}

// FormatDim prints a size, "?" for DimUnknown, or a symbol's name.
func FormatDim(d int64) string {
	if DimIsKnown(d) {
		return fmt.Sprint(d)
	}
	if DimIsSymbol(d) {
		if name, err := DimSymbolName(d); err == nil {
			return name
		}
	}
	return "?"
}

// FormatDims prints dims as the library does: "(1, ?, 4)", "(4,)", "()".
func FormatDims(dims []int64) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = FormatDim(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// Version is the library's version; VersionString the same as "MAJOR.MINOR.PATCH"; ABIVersion its
// OF_ABI_VERSION.
func Version() (major, minor, patch int) {
	var a, b, c C.int32_t
	C.of_version(&a, &b, &c)
	return int(a), int(b), int(c)
}
func VersionString() string { return C.GoString(C.of_version_string()) }
func ABIVersion() int       { return int(C.of_abi_version()) }

// CheckVersion is an error when the loaded library serves another ABI than this package's header.
func CheckVersion() error {
	if got := ABIVersion(); got != HeaderABIVersion {
		return newError(CodeFailedPrecondition, "liboneflow_c %s has ABI %d, this package was built for ABI %d",
			VersionString(), got, HeaderABIVersion)
	}
	return nil
}

// CUDAIsBuilt reports whether the library includes the CUDA backend.
func CUDAIsBuilt() bool { return C.of_cuda_is_built() != 0 }

// DeviceMemoryStats are the counters of a device's memory allocator (of_device_memory_stats_t): bytes
// and counts since the process started, every session's tensors on the device included.
type DeviceMemoryStats struct {
	BytesInUse        uint64 // storage of live tensors, as asked (before rounding)
	PeakBytesInUse    uint64
	BytesReserved     uint64 // held from the device: in use, rounding slack and the cache
	PeakBytesReserved uint64
	BytesCached       uint64 // of BytesReserved, what no allocation uses
	Allocations       uint64
	DeviceAllocations uint64 // allocations that took new memory from the device
	DeviceFrees       uint64 // memory given back to the device
	OutOfMemory       uint64 // allocations that failed with CodeResourceExhausted
}

// DeviceMemory reads the counters of a device (DeviceCPU or DeviceCUDA, and its index);
// CodeUnavailable for a device this build or machine does not have.
func DeviceMemory(deviceType, index int32) (DeviceMemoryStats, error) {
	var c C.of_device_memory_stats_t
	c.struct_size = C.size_t(unsafe.Sizeof(c))
	if err := statusError(C.of_device_memory_stats(C.int32_t(deviceType), C.int32_t(index), &c)); err != nil {
		return DeviceMemoryStats{}, err
	}
	return DeviceMemoryStats{uint64(c.bytes_in_use), uint64(c.peak_bytes_in_use), uint64(c.bytes_reserved),
		uint64(c.peak_bytes_reserved), uint64(c.bytes_cached), uint64(c.allocations), uint64(c.device_allocations),
		uint64(c.device_frees), uint64(c.out_of_memory)}, nil
}

// EmptyDeviceCache gives the device's cached memory that no tensor uses back to the device; tensors are
// unaffected.
func EmptyDeviceCache(deviceType, index int32) error {
	return statusError(C.of_device_empty_cache(C.int32_t(deviceType), C.int32_t(index)))
}

// OpNames lists the library's registered ops in name order (backward helpers included).
func OpNames() ([]string, error) {
	var n C.size_t
	if err := statusError(C.of_op_count(&n)); err != nil {
		return nil, err
	}
	names := make([]string, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		var p *C.char
		if err := statusError(C.of_op_name(i, &p)); err != nil {
			return nil, err
		}
		names = append(names, C.GoString(p))
	}
	return names, nil
}

// Grad mode is a property of the calling OS thread. These functions pin the goroutine to its thread
// for the duration of fn, so that the mode fn sees cannot change under it.

// NoGrad runs fn with grad mode off on this goroutine's thread (ops record no backward graph), and
// restores the previous mode.
func NoGrad(fn func() error) error { return WithGradEnabled(false, fn) }

// WithGradEnabled runs fn with grad mode set to enabled, pinned to one OS thread, and restores the
// previous mode afterwards (also when fn panics).
func WithGradEnabled(enabled bool, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev C.of_bool_t
	if err := statusError(C.of_grad_set_enabled(cBool(enabled), &prev)); err != nil {
		return err
	}
	defer func() { _ = statusError(C.of_grad_set_enabled(prev, nil)) }()
	return fn()
}

// WithAutocast runs fn with the calling thread's autocast dtype set to dtype (Float16 or BFloat16;
// nil: off), pinned to one OS thread, and restores the previous dtype afterwards (also when fn
// panics). Under autocast conv2d, matmul and linear run in dtype on float32 inputs (float32
// accumulation), softmax, the losses and the normalizations in float32; the casts are recorded ops,
// so float32 parameters get float32 gradients (of_autocast_set). Another dtype is an
// INVALID_ARGUMENT error and fn is not run.
func WithAutocast(dtype *DType, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prev *C.of_dtype_t
	if err := statusError(C.of_autocast_set(dtype.cptr(), &prev)); err != nil {
		return err
	}
	defer func() { _ = statusError(C.of_autocast_set(prev, nil)) }()
	return fn()
}

// AutocastDType is the autocast dtype of the thread the goroutine runs on now (nil when off, the
// default; only meaningful inside WithAutocast or with the goroutine locked to its thread).
func AutocastDType() (*DType, error) {
	var d *C.of_dtype_t
	if err := statusError(C.of_autocast_get(&d)); err != nil {
		return nil, err
	}
	return dtypeOf(d), nil
}

// GradEnabled is the grad mode of the thread the goroutine runs on now (true by default; only
// meaningful inside WithGradEnabled / NoGrad or with the goroutine locked to its thread).
func GradEnabled() (bool, error) {
	var on C.of_bool_t
	if err := statusError(C.of_grad_is_enabled(&on)); err != nil {
		return false, err
	}
	return on != 0, nil
}
