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

// Session is a oneflow_c session: thread pool, random generator, default device. It is safe for
// concurrent use. Close drops the Session's own reference to the C session; the C session is destroyed
// when the last object made from it (tensors, graphs, optimizers) is closed too, so tensors made from
// a closed Session keep working; the Session's own methods then return ErrClosed.
type Session struct {
	core *sessionCore
	life life
}

// NewSession creates a session; opts nil means the defaults (NewSessionOptions()).
func NewSession(opts *SessionOptions) (*Session, error) {
	var co C.of_session_options_t
	var ptr *C.of_session_t
	if err := statusError(C.of_session_create(opts.cOptions(&co), &ptr)); err != nil {
		return nil, err
	}
	core := &sessionCore{ptr: ptr}
	core.refs.Store(1)
	s := &Session{core: core}
	runtime.SetFinalizer(s, (*Session).Close)
	return s, nil
}

// Close drops the Session's reference (see Session). Idempotent and safe from any goroutine.
func (s *Session) Close() error {
	if s != nil && s.life.close() {
		s.free()
	}
	return nil
}

func (s *Session) free() {
	runtime.SetFinalizer(s, nil)
	s.core.unref()
}

// begin enters a call on the session: its core, or ErrClosed.
func (s *Session) begin(what string) (*sessionCore, error) {
	if s == nil || !s.life.enter() {
		return nil, closedError(what, "session")
	}
	return s.core, nil
}

func (s *Session) end() {
	if s.life.exit() {
		s.free()
	}
}

// ManualSeed restarts the session's random generator.
func (s *Session) ManualSeed(seed uint64) error {
	c, err := s.begin("ManualSeed")
	if err != nil {
		return err
	}
	defer s.end()
	st := C.of_session_manual_seed(c.ptr, C.uint64_t(seed))
	runtime.KeepAlive(s)
	return statusError(st)
}

// DimSymbol is the session's named dim symbol (the same name gives the same value in one session),
// to put in a graph input's dims.
func (s *Session) DimSymbol(name string) (int64, error) {
	c, err := s.begin("DimSymbol")
	if err != nil {
		return 0, err
	}
	defer s.end()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var d C.int64_t
	st := C.of_session_dim_symbol(c.ptr, cname, &d)
	runtime.KeepAlive(s)
	return int64(d), statusError(st)
}

type creator func(*C.of_session_t, *C.of_tensor_options_t, **C.of_tensor_t) *C.of_status_t

func (s *Session) create(what string, opts *TensorOptions, f creator) (*Tensor, error) {
	c, err := s.begin(what)
	if err != nil {
		return nil, err
	}
	defer s.end()
	var co C.of_tensor_options_t
	var out *C.of_tensor_t
	st := f(c.ptr, opts.cOptions(&co), &out)
	runtime.KeepAlive(s)
	return c.tensorResult(st, out)
}

// FromData is a tensor holding a copy of data: row-major elements of dtype (bool: bytes 0 or 1).
// opts nil: the session's device. The typed helpers (FromFloat32, ...) call it.
func (s *Session) FromData(dtype *DType, dims []int64, data []byte, opts *TensorOptions) (*Tensor, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	t, err := s.fromPtr("FromData", dtype, dims, p, len(data), opts)
	runtime.KeepAlive(data)
	return t, err
}

func (s *Session) fromPtr(what string, dtype *DType, dims []int64, p unsafe.Pointer, nbytes int,
	opts *TensorOptions) (*Tensor, error) {
	return s.create(what, opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		// p points into a Go slice of plain numbers, which the library copies before returning.
		return C.of_tensor_from_data(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), p, C.size_t(nbytes), o, out)
	})
}

// Adopt makes a CPU tensor over buf without a copy: the library frees buf when the tensor's last
// reference goes (AdoptedBuffersFreed counts it), or at once when Adopt fails. buf is unusable
// afterwards either way.
func (s *Session) Adopt(dtype *DType, dims []int64, buf *CBuffer) (*Tensor, error) {
	if buf == nil || buf.ptr == nil {
		return nil, newError(CodeInvalidArgument, "Adopt: the buffer is nil, adopted or freed")
	}
	c, err := s.begin("Adopt")
	if err != nil {
		return nil, err
	}
	defer s.end()
	p, n := buf.ptr, buf.n
	buf.ptr = nil
	var out *C.of_tensor_t
	st := C.of_tensor_adopt_data(c.ptr, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), p, C.size_t(n),
		freeDeleter(), nil, &out)
	runtime.KeepAlive(s)
	return c.tensorResult(st, out)
}

// Empty is a tensor with uninitialised contents (bool: false).
func (s *Session) Empty(dtype *DType, dims []int64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Empty", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_empty(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), o, out)
	})
}

// Zeros is a tensor of zeros.
func (s *Session) Zeros(dtype *DType, dims []int64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Zeros", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_zeros(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), o, out)
	})
}

// Ones is a tensor of ones.
func (s *Session) Ones(dtype *DType, dims []int64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Ones", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_ones(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), o, out)
	})
}

// Full is a tensor whose every element is value (representable in dtype).
func (s *Session) Full(dtype *DType, dims []int64, value float64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Full", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_full(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), C.double(value), o, out)
	})
}

// Rand is uniform in [0, 1) from the session's generator (floating dtypes).
func (s *Session) Rand(dtype *DType, dims []int64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Rand", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_rand(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), o, out)
	})
}

// Randn is standard normal from the session's generator (floating dtypes).
func (s *Session) Randn(dtype *DType, dims []int64, opts *TensorOptions) (*Tensor, error) {
	return s.create("Randn", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_randn(sp, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), o, out)
	})
}

// Arange is the 1-d tensor start, start+step, ... up to but excluding end.
func (s *Session) Arange(start, end, step float64, dtype *DType, opts *TensorOptions) (*Tensor, error) {
	return s.create("Arange", opts, func(sp *C.of_session_t, o *C.of_tensor_options_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_tensor_arange(sp, C.double(start), C.double(end), C.double(step), dtype.cptr(), o, out)
	})
}

func sliceArg[T any](data []T) (unsafe.Pointer, int) {
	if len(data) == 0 {
		return nil, 0
	}
	var zero T
	return unsafe.Pointer(&data[0]), len(data) * int(unsafe.Sizeof(zero))
}

func fromSlice[T any](s *Session, what string, dtype *DType, dims []int64, data []T) (*Tensor, error) {
	p, n := sliceArg(data)
	t, err := s.fromPtr(what, dtype, dims, p, n, nil)
	runtime.KeepAlive(data)
	return t, err
}

// FromFloat32 ... FromInt64: tensors holding a copy of data, of the matching dtype.
func (s *Session) FromFloat32(dims []int64, data []float32) (*Tensor, error) {
	return fromSlice(s, "FromFloat32", Float32, dims, data)
}
func (s *Session) FromFloat64(dims []int64, data []float64) (*Tensor, error) {
	return fromSlice(s, "FromFloat64", Float64, dims, data)
}
func (s *Session) FromInt8(dims []int64, data []int8) (*Tensor, error) {
	return fromSlice(s, "FromInt8", Int8, dims, data)
}
func (s *Session) FromUint8(dims []int64, data []uint8) (*Tensor, error) {
	return fromSlice(s, "FromUint8", Uint8, dims, data)
}
func (s *Session) FromInt16(dims []int64, data []int16) (*Tensor, error) {
	return fromSlice(s, "FromInt16", Int16, dims, data)
}
func (s *Session) FromInt32(dims []int64, data []int32) (*Tensor, error) {
	return fromSlice(s, "FromInt32", Int32, dims, data)
}
func (s *Session) FromInt64(dims []int64, data []int64) (*Tensor, error) {
	return fromSlice(s, "FromInt64", Int64, dims, data)
}

// FromBool is a bool tensor (one byte per element, 0 or 1).
func (s *Session) FromBool(dims []int64, data []bool) (*Tensor, error) {
	b := make([]byte, len(data))
	for i, v := range data {
		if v {
			b[i] = 1
		}
	}
	return fromSlice(s, "FromBool", Bool, dims, b)
}

// FromFloat16Bits and FromBFloat16Bits take the raw IEEE half / bfloat16 bit patterns.
func (s *Session) FromFloat16Bits(dims []int64, bits []uint16) (*Tensor, error) {
	return fromSlice(s, "FromFloat16Bits", Float16, dims, bits)
}
func (s *Session) FromBFloat16Bits(dims []int64, bits []uint16) (*Tensor, error) {
	return fromSlice(s, "FromBFloat16Bits", BFloat16, dims, bits)
}
