// Package oneflow is the Go binding of oneflow_c, an embeddable deep-learning runtime.
//
// The package is cgo over capi/include/oneflow/oneflow_c.h. Its op methods (x.Add(y), x.Conv2d(w,
// nil, opts), s.Cat(...)), options structs (NewConv2dOptions() with the C defaults) and enums are
// generated from the header into ops_gen.go at build time (go generate, or CMake); the rest is
// written by hand. See README.md for ownership and thread rules.
package oneflow

//go:generate python3 ../../gen/gen_ops.py go ../../../capi/include/oneflow/oneflow_c.h .

/*
#include <stdlib.h>
#include <oneflow/oneflow_c.h>

// Adopted buffers: memory from malloc handed to a tensor (Session.Adopt); the library calls this
// deleter once when it no longer needs the memory (on any thread). It counts its calls, so that
// tests observe releases through the library itself.
static long long ofgo_adopted_freed;
static void ofgo_free_deleter(void* data, void* user_data) {
  (void)user_data;
  free(data);
  __atomic_fetch_add(&ofgo_adopted_freed, 1, __ATOMIC_RELAXED);
}
static long long ofgo_adopted_freed_count(void) { return __atomic_load_n(&ofgo_adopted_freed, __ATOMIC_RELAXED); }
static of_deleter_fn ofgo_free_deleter_fn(void) { return ofgo_free_deleter; }
*/
import "C"

import (
	"unsafe"
)

// freeDeleter is the C deleter of adopted buffers (free + count).
func freeDeleter() C.of_deleter_fn { return C.ofgo_free_deleter_fn() }

func cBool(b bool) C.of_bool_t {
	if b {
		return 1
	}
	return 0
}

// dimsArg is a C view of dims for the duration of a call (NULL when empty). A Go []int64 holds no
// Go pointers, so cgo allows passing it; the library copies what it keeps.
func dimsArg(dims []int64) *C.int64_t {
	if len(dims) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&dims[0]))
}

// AdoptedBuffersFreed is the number of adopted C buffers (Session.Adopt) the library has freed so far
// in this process: each tensor that adopted one frees it when its last reference goes.
func AdoptedBuffersFreed() int64 {
	return int64(C.ofgo_adopted_freed_count())
}

// CBuffer is host memory from C malloc that a tensor can adopt without a copy (Session.Adopt). Fill it
// through Bytes (or Float32s) from Go first; after Adopt it belongs to the tensor.
type CBuffer struct {
	ptr unsafe.Pointer
	n   int
}

// NewCBuffer allocates nbytes (>= 0) of C memory.
func NewCBuffer(nbytes int) (*CBuffer, error) {
	if nbytes < 0 {
		return nil, newError(CodeInvalidArgument, "NewCBuffer: nbytes %d is negative", nbytes)
	}
	n := nbytes
	if n == 0 {
		n = 1
	}
	p := C.malloc(C.size_t(n))
	if p == nil {
		return nil, newError(CodeResourceExhausted, "NewCBuffer: cannot allocate %d bytes", nbytes)
	}
	return &CBuffer{ptr: p, n: nbytes}, nil
}

// Bytes is a Go view of the buffer's memory; nil once the buffer was adopted or freed.
func (b *CBuffer) Bytes() []byte {
	if b == nil || b.ptr == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.ptr), b.n)
}

// Float32s is a Go view of the buffer as float32 values (its size must be a multiple of 4).
func (b *CBuffer) Float32s() []float32 {
	if b == nil || b.ptr == nil {
		return nil
	}
	return unsafe.Slice((*float32)(b.ptr), b.n/4)
}

// Free releases a buffer that was not adopted. Idempotent.
func (b *CBuffer) Free() {
	if b != nil && b.ptr != nil {
		C.free(b.ptr)
		b.ptr = nil
	}
}
