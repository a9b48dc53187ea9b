package oneflow

/*
#include <stdlib.h>
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// NamedTensor is a tensor with its name in a safetensors file.
type NamedTensor struct {
	Name   string
	Tensor *Tensor
}

// cStrings copies names into C strings; free them with freeCStrings.
func cStrings(names []string) []*C.char {
	out := make([]*C.char, len(names))
	for i, n := range names {
		out[i] = C.CString(n)
	}
	return out
}

func freeCStrings(cs []*C.char) {
	for _, c := range cs {
		C.free(unsafe.Pointer(c))
	}
}

func cStringsPtr(cs []*C.char) **C.char {
	if len(cs) == 0 {
		return nil
	}
	return &cs[0]
}

// SaveSafetensors writes tensors under names (same length) to path, atomically (a temporary file
// renamed over path).
func SaveSafetensors(path string, names []string, tensors []*Tensor) error {
	if len(names) != len(tensors) {
		return newError(CodeInvalidArgument, "SaveSafetensors: %d names for %d tensors", len(names), len(tensors))
	}
	ct, err := tensorsArg("SaveSafetensors", "tensors", tensors)
	if err != nil {
		return err
	}
	defer endTensors(tensors)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cn := cStrings(names)
	defer freeCStrings(cn)
	st := C.of_safetensors_save(cpath, cStringsPtr(cn), tensorsPtr(ct), C.size_t(len(ct)))
	runtime.KeepAlive(tensors)
	return statusError(st)
}

// LoadSafetensors reads every tensor of the file onto the session's default device, in file order.
func (s *Session) LoadSafetensors(path string) ([]NamedTensor, error) {
	c, err := s.begin("LoadSafetensors")
	if err != nil {
		return nil, err
	}
	defer s.end()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var list *C.of_tensor_list_t
	st := C.of_safetensors_load(c.ptr, cpath, &list)
	runtime.KeepAlive(s)
	if err := statusError(st); err != nil {
		return nil, err
	}
	defer C.of_tensor_list_destroy(list)
	n := int(C.of_tensor_list_count(list))
	out := make([]NamedTensor, 0, n)
	for i := 0; i < n; i++ {
		var name *C.char
		var t *C.of_tensor_t
		if err := statusError(C.of_tensor_list_name(list, C.size_t(i), &name)); err != nil {
			closeNamed(out)
			return nil, err
		}
		if err := statusError(C.of_tensor_list_get(list, C.size_t(i), &t)); err != nil {
			closeNamed(out)
			return nil, err
		}
		out = append(out, NamedTensor{C.GoString(name), newTensor(c, t)})
	}
	return out, nil
}

func closeNamed(ts []NamedTensor) {
	for _, t := range ts {
		t.Tensor.Close()
	}
}

// LoadSafetensorsInto copies the file's tensors into existing tensors by name (e.g. a model's
// parameters), in place. strict: every name must be in the file and every tensor of the file named.
func LoadSafetensorsInto(path string, names []string, tensors []*Tensor, strict bool) error {
	if len(names) != len(tensors) {
		return newError(CodeInvalidArgument, "LoadSafetensorsInto: %d names for %d tensors", len(names), len(tensors))
	}
	ct, err := tensorsArg("LoadSafetensorsInto", "tensors", tensors)
	if err != nil {
		return err
	}
	defer endTensors(tensors)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cn := cStrings(names)
	defer freeCStrings(cn)
	st := C.of_safetensors_load_into(cpath, cStringsPtr(cn), tensorsPtr(ct), C.size_t(len(ct)), cBool(strict))
	runtime.KeepAlive(tensors)
	return statusError(st)
}
