package oneflow

/*
#include <stdlib.h>
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"sync"
	"unsafe"
)

// DType is an element type. There is one *DType per C dtype (the C library interns them): every
// function returning a dtype returns one of the package variables Bool ... Float64, so
// t.DType() == oneflow.Float32 holds whichever path a dtype came from.
type DType struct {
	ptr               *C.of_dtype_t
	name              string
	code              int32
	size              int
	floating, signed  bool
	integer, complex_ bool
}

func newDType(p *C.of_dtype_t) *DType {
	return &DType{
		ptr:      p,
		name:     C.GoString(C.of_dtype_name(p)),
		code:     int32(C.of_dtype_code(p)),
		size:     int(C.of_dtype_size(p)),
		floating: C.of_dtype_is_floating_point(p) != 0,
		signed:   C.of_dtype_is_signed(p) != 0,
		integer:  C.of_dtype_is_integer(p) != 0,
		complex_: C.of_dtype_is_complex(p) != 0,
	}
}

// The ten dtypes, canonical instances.
var (
	Bool     = newDType(C.of_dtype_bool())
	Int8     = newDType(C.of_dtype_int8())
	Uint8    = newDType(C.of_dtype_uint8())
	Int16    = newDType(C.of_dtype_int16())
	Int32    = newDType(C.of_dtype_int32())
	Int64    = newDType(C.of_dtype_int64())
	Float16  = newDType(C.of_dtype_float16())
	BFloat16 = newDType(C.of_dtype_bfloat16())
	Float32  = newDType(C.of_dtype_float32())
	Float64  = newDType(C.of_dtype_float64())
)

// DTypes lists the ten dtypes in code order.
var DTypes = []*DType{Bool, Int8, Uint8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64}

var dtypeByPtr = func() map[*C.of_dtype_t]*DType {
	m := make(map[*C.of_dtype_t]*DType, len(DTypes))
	for _, d := range DTypes {
		m[d.ptr] = d
	}
	return m
}()

// dtypeOf is the canonical *DType of a C dtype pointer (a dtype unknown to this binding, from a newer
// library, gets an instance of its own the first time, and keeps it; the table is read-only otherwise).
func dtypeOf(p *C.of_dtype_t) *DType {
	if p == nil {
		return nil
	}
	if d, ok := dtypeByPtr[p]; ok {
		return d
	}
	return newerDType(p)
}

func (d *DType) cptr() *C.of_dtype_t {
	if d == nil {
		return nil
	}
	return d.ptr
}

func (d *DType) String() string {
	if d == nil {
		return "<nil dtype>"
	}
	return d.name
}

// Name is the library's name ("float32"); Code its stable OF_DTYPE_* code; Size its bytes per element.
func (d *DType) Name() string          { return d.name }
func (d *DType) Code() int32           { return d.code }
func (d *DType) Size() int             { return d.size }
func (d *DType) IsFloatingPoint() bool { return d.floating }
func (d *DType) IsSigned() bool        { return d.signed }
func (d *DType) IsInteger() bool       { return d.integer }
func (d *DType) IsComplex() bool       { return d.complex_ }

// DTypeFromCode is the dtype with an OF_DTYPE_* code (NOT_FOUND for 0 and unknown codes).
func DTypeFromCode(code int32) (*DType, error) {
	var p *C.of_dtype_t
	if err := statusError(C.of_dtype_from_code(C.int32_t(code), &p)); err != nil {
		return nil, err
	}
	return dtypeOf(p), nil
}

// DTypeFromName is the dtype called name ("float32", or an alias such as "float", "long").
func DTypeFromName(name string) (*DType, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var p *C.of_dtype_t
	if err := statusError(C.of_dtype_from_name(cname, &p)); err != nil {
		return nil, err
	}
	return dtypeOf(p), nil
}

// DTypeFromDLPack is the dtype of DLPack's DLDataType {code, bits, lanes}.
func DTypeFromDLPack(code, bits uint8, lanes uint16) (*DType, error) {
	var p *C.of_dtype_t
	if err := statusError(C.of_dtype_from_dlpack(C.uint8_t(code), C.uint8_t(bits), C.uint16_t(lanes), &p)); err != nil {
		return nil, err
	}
	return dtypeOf(p), nil
}

// DLPack is the dtype's DLDataType.
func (d *DType) DLPack() (code, bits uint8, lanes uint16, err error) {
	var c, b C.uint8_t
	var l C.uint16_t
	if err := statusError(C.of_dtype_to_dlpack(d.cptr(), &c, &b, &l)); err != nil {
		return 0, 0, 0, err
	}
	return uint8(c), uint8(b), uint16(l), nil
}

// Promote is the dtype of a binary op's result on operands of dtypes a and b.
func Promote(a, b *DType) (*DType, error) {
	var p *C.of_dtype_t
	if err := statusError(C.of_dtype_promote(a.cptr(), b.cptr(), &p)); err != nil {
		return nil, err
	}
	return dtypeOf(p), nil
}

var newerDTypes sync.Map // *C.of_dtype_t -> *DType, for dtypes this binding does not list

func newerDType(p *C.of_dtype_t) *DType {
	if d, ok := newerDTypes.Load(p); ok {
		return d.(*DType)
	}
	d, _ := newerDTypes.LoadOrStore(p, newDType(p))
	return d.(*DType)
}
