package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// DLPack exchange (oneflow_c.h, "DLPack exchange"): the managed tensors travel as unsafe.Pointer, to
// hand to or take from another library's cgo code (a *C.DLManagedTensorVersioned or
// *C.DLManagedTensor of DLPack's dlpack.h or <oneflow/dlpack.h>). Go memory is never exported this way:
// the structs and the memory they describe belong to C.

// ToDLPack exports t as a DLPack 1.x managed tensor (a *DLManagedTensorVersioned) that shares its
// memory without a copy and keeps it alive until the consumer calls the struct's deleter, exactly
// once, from any goroutine; t may be closed before. Views keep their strides.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) {
	if _, err := t.begin("ToDLPack"); err != nil {
		return nil, err
	}
	defer t.end()
	var out *C.struct_DLManagedTensorVersioned
	st := C.of_tensor_to_dlpack(t.ptr, &out)
	runtime.KeepAlive(t)
	if err := statusError(st); err != nil {
		return nil, err
	}
	return unsafe.Pointer(out), nil
}

// ToDLPackLegacy exports t as a legacy DLPack managed tensor (a *DLManagedTensor), what NumPy 1.24 and
// PyTorch 1.13 read; an error for a read-only tensor, which the legacy struct cannot mark.
func (t *Tensor) ToDLPackLegacy() (unsafe.Pointer, error) {
	if _, err := t.begin("ToDLPackLegacy"); err != nil {
		return nil, err
	}
	defer t.end()
	var out *C.struct_DLManagedTensor
	st := C.of_tensor_to_dlpack_legacy(t.ptr, &out)
	runtime.KeepAlive(t)
	if err := statusError(st); err != nil {
		return nil, err
	}
	return unsafe.Pointer(out), nil
}

// FromDLPack imports a DLPack 1.x managed tensor (a *DLManagedTensorVersioned made by C code) as a
// tensor of s over its memory, without a copy. The library takes the struct over: it calls its
// deleter exactly once, when the tensor's last reference is released, or before returning an error.
// A READ_ONLY import is refused by every in-place writer.
func (s *Session) FromDLPack(managed unsafe.Pointer) (*Tensor, error) {
	c, err := s.begin("FromDLPack")
	if err != nil {
		return nil, err
	}
	defer s.end()
	var out *C.of_tensor_t
	st := C.of_tensor_from_dlpack((*C.struct_DLManagedTensorVersioned)(managed), &out)
	runtime.KeepAlive(s)
	return c.tensorResult(st, out)
}

// FromDLPackLegacy imports a legacy DLPack managed tensor (a *DLManagedTensor) as FromDLPack does.
func (s *Session) FromDLPackLegacy(managed unsafe.Pointer) (*Tensor, error) {
	c, err := s.begin("FromDLPackLegacy")
	if err != nil {
		return nil, err
	}
	defer s.end()
	var out *C.of_tensor_t
	st := C.of_tensor_from_dlpack_legacy((*C.struct_DLManagedTensor)(managed), &out)
	runtime.KeepAlive(s)
	return c.tensorResult(st, out)
}
