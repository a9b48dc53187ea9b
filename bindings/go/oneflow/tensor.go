package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Tensor holds one reference to a C tensor and one to its session's C handle (which so stays valid
// for the tensor's op methods, even after Session.Close). Close releases both; it is idempotent and
// safe from any goroutine, and later calls return ErrClosed. A tensor left unclosed is released by a
// finalizer after it becomes unreachable (a backstop: close tensors, e.g. with defer).
//
// A tensor may be read (queried, copied out, used as an op input) from several goroutines at once;
// its autograd state (SetRequiresGrad, Grad, Backward) from one goroutine at a time.
type Tensor struct {
	ptr  *C.of_tensor_t
	core *sessionCore
	life life
}

func newTensor(core *sessionCore, ptr *C.of_tensor_t) *Tensor {
	core.ref()
	t := &Tensor{ptr: ptr, core: core}
	runtime.SetFinalizer(t, (*Tensor).Close)
	return t
}

// Close releases the tensor's references. Idempotent; safe from any goroutine; a call running on the
// tensor in another goroutine finishes first (the release happens when it returns).
func (t *Tensor) Close() error {
	if t != nil && t.life.close() {
		t.free()
	}
	return nil
}

func (t *Tensor) free() {
	runtime.SetFinalizer(t, nil)
	C.of_tensor_release(t.ptr)
	t.core.unref()
}

// begin enters a call with t as receiver: the session core to pass, or ErrClosed.
func (t *Tensor) begin(what string) (*sessionCore, error) {
	if t == nil || !t.life.enter() {
		return nil, closedError(what, "tensor")
	}
	return t.core, nil
}

func (t *Tensor) end() {
	if t.life.exit() {
		t.free()
	}
}

// tensorArg enters a call with t as an argument: its C pointer (NULL for nil, which the library
// reports by the argument's name where it is required), or ErrClosed.
func tensorArg(what, name string, t *Tensor) (*C.of_tensor_t, error) {
	if t == nil {
		return nil, nil
	}
	if !t.life.enter() {
		return nil, closedError(what+": argument "+name, "tensor")
	}
	return t.ptr, nil
}

func (t *Tensor) endArg() {
	if t != nil {
		t.end()
	}
}

func tensorsArg(what, name string, ts []*Tensor) ([]*C.of_tensor_t, error) {
	ptrs := make([]*C.of_tensor_t, len(ts))
	for i, t := range ts {
		p, err := tensorArg(what, fmt.Sprintf("%s[%d]", name, i), t)
		if err != nil {
			endTensors(ts[:i])
			return nil, err
		}
		ptrs[i] = p
	}
	return ptrs, nil
}

func endTensors(ts []*Tensor) {
	for _, t := range ts {
		t.endArg()
	}
}

func tensorsPtr(ptrs []*C.of_tensor_t) **C.of_tensor_t {
	if len(ptrs) == 0 {
		return nil
	}
	return (**C.of_tensor_t)(unsafe.Pointer(&ptrs[0]))
}

// Retain is a second handle to the same C tensor (of_tensor_retain), closed independently.
func (t *Tensor) Retain() (*Tensor, error) {
	c, err := t.begin("Retain")
	if err != nil {
		return nil, err
	}
	defer t.end()
	C.of_tensor_retain(t.ptr)
	runtime.KeepAlive(t)
	return newTensor(c, t.ptr), nil
}

// DType is the tensor's dtype (a canonical instance: compare with ==); nil for a closed tensor.
func (t *Tensor) DType() *DType {
	if _, err := t.begin("DType"); err != nil {
		return nil
	}
	defer t.end()
	var p *C.of_dtype_t
	st := C.of_tensor_dtype(t.ptr, &p)
	runtime.KeepAlive(t)
	if statusError(st) != nil {
		return nil
	}
	return dtypeOf(p)
}

// Ndim is the number of dims (0 for a closed tensor).
func (t *Tensor) Ndim() int {
	if _, err := t.begin("Ndim"); err != nil {
		return 0
	}
	defer t.end()
	var n C.size_t
	st := C.of_tensor_ndim(t.ptr, &n)
	runtime.KeepAlive(t)
	if statusError(st) != nil {
		return 0
	}
	return int(n)
}

// Dims are the sizes; a lazy tensor's may hold DimUnknown or symbols (print with FormatDims). nil for a
// closed tensor.
func (t *Tensor) Dims() []int64 {
	if _, err := t.begin("Dims"); err != nil {
		return nil
	}
	defer t.end()
	var n C.size_t
	if statusError(C.of_tensor_ndim(t.ptr, &n)) != nil {
		return nil
	}
	dims := make([]int64, int(n))
	st := C.of_tensor_dims(t.ptr, dimsArg(dims), n)
	runtime.KeepAlive(t)
	if statusError(st) != nil {
		return nil
	}
	return dims
}

// Numel is the element count (an error for a lazy tensor with unknown dims).
func (t *Tensor) Numel() (int64, error) {
	if _, err := t.begin("Numel"); err != nil {
		return 0, err
	}
	defer t.end()
	var n C.int64_t
	st := C.of_tensor_numel(t.ptr, &n)
	runtime.KeepAlive(t)
	return int64(n), statusError(st)
}

// NBytes is the data size in bytes (an error for a lazy tensor with unknown dims).
func (t *Tensor) NBytes() (int, error) {
	if _, err := t.begin("NBytes"); err != nil {
		return 0, err
	}
	defer t.end()
	var n C.size_t
	st := C.of_tensor_nbytes(t.ptr, &n)
	runtime.KeepAlive(t)
	return int(n), statusError(st)
}

// IsLazy reports a lazy tensor: a value of a graph being built, without data.
func (t *Tensor) IsLazy() bool {
	if _, err := t.begin("IsLazy"); err != nil {
		return false
	}
	defer t.end()
	var b C.of_bool_t
	st := C.of_tensor_is_lazy(t.ptr, &b)
	runtime.KeepAlive(t)
	return statusError(st) == nil && b != 0
}

// Device is where the tensor lives: DeviceCPU or DeviceCUDA, and the device index.
func (t *Tensor) Device() (deviceType, index int32, err error) {
	if _, err := t.begin("Device"); err != nil {
		return 0, 0, err
	}
	defer t.end()
	var dt, di C.int32_t
	st := C.of_tensor_device(t.ptr, &dt, &di)
	runtime.KeepAlive(t)
	return int32(dt), int32(di), statusError(st)
}

func (t *Tensor) String() string {
	dt := t.DType()
	if dt == nil {
		return "Tensor(closed)"
	}
	lazy := ""
	if t.IsLazy() {
		lazy = ", lazy"
	}
	return fmt.Sprintf("Tensor(%s, %s%s)", dt, FormatDims(t.Dims()), lazy)
}

// copyOut copies the elements into a new []T after checking the dtype (want, or any dtype of
// elemSize bytes for Bytes).
func copyOut[T any](t *Tensor, what string, want *DType) ([]T, error) {
	if _, err := t.begin(what); err != nil {
		return nil, err
	}
	defer t.end()
	var p *C.of_dtype_t
	if err := statusError(C.of_tensor_dtype(t.ptr, &p)); err != nil {
		return nil, err
	}
	if got := dtypeOf(p); want != nil && got != want {
		return nil, newError(CodeInvalidArgument, "%s: the tensor's dtype is %s, not %s", what, got, want)
	}
	var nbytes C.size_t
	if err := statusError(C.of_tensor_nbytes(t.ptr, &nbytes)); err != nil {
		return nil, err
	}
	var zero T
	size := C.size_t(unsafe.Sizeof(zero))
	if nbytes%size != 0 {
		return nil, newError(CodeInternal, "%s: %d bytes are not a whole number of %d-byte elements", what, nbytes, size)
	}
	out := make([]T, int(nbytes/size))
	var dst unsafe.Pointer
	if len(out) > 0 {
		dst = unsafe.Pointer(&out[0])
	}
	st := C.of_tensor_copy_to_host(t.ptr, dst, nbytes)
	runtime.KeepAlive(t)
	if err := statusError(st); err != nil {
		return nil, err
	}
	return out, nil
}

// Float32s ... Int64s copy the elements out; a tensor of another dtype is INVALID_ARGUMENT.
func (t *Tensor) Float32s() ([]float32, error) { return copyOut[float32](t, "Float32s", Float32) }
func (t *Tensor) Float64s() ([]float64, error) { return copyOut[float64](t, "Float64s", Float64) }
func (t *Tensor) Int8s() ([]int8, error)       { return copyOut[int8](t, "Int8s", Int8) }
func (t *Tensor) Uint8s() ([]uint8, error)     { return copyOut[uint8](t, "Uint8s", Uint8) }
func (t *Tensor) Int16s() ([]int16, error)     { return copyOut[int16](t, "Int16s", Int16) }
func (t *Tensor) Int32s() ([]int32, error)     { return copyOut[int32](t, "Int32s", Int32) }
func (t *Tensor) Int64s() ([]int64, error)     { return copyOut[int64](t, "Int64s", Int64) }

// Float16Bits and BFloat16Bits copy out the raw 16-bit patterns.
func (t *Tensor) Float16Bits() ([]uint16, error) { return copyOut[uint16](t, "Float16Bits", Float16) }
func (t *Tensor) BFloat16Bits() ([]uint16, error) {
	return copyOut[uint16](t, "BFloat16Bits", BFloat16)
}

// Bools copies out a bool tensor.
func (t *Tensor) Bools() ([]bool, error) {
	b, err := copyOut[uint8](t, "Bools", Bool)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(b))
	for i, v := range b {
		out[i] = v != 0
	}
	return out, nil
}

// Bytes copies out the raw row-major bytes, whatever the dtype.
func (t *Tensor) Bytes() ([]byte, error) { return copyOut[byte](t, "Bytes", nil) }

// Item is the value of a one-element tensor of any dtype, as float64.
func (t *Tensor) Item() (float64, error) {
	x := t
	if t.DType() != Float64 {
		c, err := t.Cast(Float64)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		x = c
	}
	v, err := x.Float64s()
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, newError(CodeInvalidArgument, "Item: the tensor has %d elements, not 1", len(v))
	}
	return v[0], nil
}

// ---- autograd ----

// SetRequiresGrad marks a floating leaf as needing gradients (or not).
func (t *Tensor) SetRequiresGrad(requiresGrad bool) error {
	if _, err := t.begin("SetRequiresGrad"); err != nil {
		return err
	}
	defer t.end()
	st := C.of_tensor_set_requires_grad(t.ptr, cBool(requiresGrad))
	runtime.KeepAlive(t)
	return statusError(st)
}

// RequiresGrad reports whether gradients flow to or through the tensor.
func (t *Tensor) RequiresGrad() bool {
	if _, err := t.begin("RequiresGrad"); err != nil {
		return false
	}
	defer t.end()
	var b C.of_bool_t
	st := C.of_tensor_requires_grad(t.ptr, &b)
	runtime.KeepAlive(t)
	return statusError(st) == nil && b != 0
}

// IsLeaf reports a leaf of the backward graph.
func (t *Tensor) IsLeaf() bool {
	if _, err := t.begin("IsLeaf"); err != nil {
		return false
	}
	defer t.end()
	var b C.of_bool_t
	st := C.of_tensor_is_leaf(t.ptr, &b)
	runtime.KeepAlive(t)
	return statusError(st) == nil && b != 0
}

// Grad is the accumulated gradient (a new tensor to close), or nil when there is none yet.
func (t *Tensor) Grad() (*Tensor, error) {
	c, err := t.begin("Grad")
	if err != nil {
		return nil, err
	}
	defer t.end()
	var g *C.of_tensor_t
	st := C.of_tensor_grad(t.ptr, &g)
	runtime.KeepAlive(t)
	if err := statusError(st); err != nil || g == nil {
		return nil, err
	}
	return newTensor(c, g), nil
}

// SetGrad replaces the gradient by grad (nil clears it).
func (t *Tensor) SetGrad(grad *Tensor) error {
	if _, err := t.begin("SetGrad"); err != nil {
		return err
	}
	defer t.end()
	cg, err := tensorArg("SetGrad", "grad", grad)
	if err != nil {
		return err
	}
	defer grad.endArg()
	st := C.of_tensor_set_grad(t.ptr, cg)
	runtime.KeepAlive(t)
	runtime.KeepAlive(grad)
	return statusError(st)
}

// Detach is a new leaf sharing the data, outside every backward graph.
func (t *Tensor) Detach() (*Tensor, error) {
	c, err := t.begin("Detach")
	if err != nil {
		return nil, err
	}
	defer t.end()
	var out *C.of_tensor_t
	st := C.of_tensor_detach(t.ptr, &out)
	runtime.KeepAlive(t)
	return c.tensorResult(st, out)
}

// CopyToDevice is a new contiguous tensor on the device (DeviceCPU or DeviceCUDA, and its index) with t's
// dtype, dims and values: a copy even on the same device, without autograd history.
func (t *Tensor) CopyToDevice(deviceType, index int32) (*Tensor, error) {
	c, err := t.begin("CopyToDevice")
	if err != nil {
		return nil, err
	}
	defer t.end()
	var out *C.of_tensor_t
	st := C.of_tensor_copy_to_device(t.ptr, C.int32_t(deviceType), C.int32_t(index), &out)
	runtime.KeepAlive(t)
	return c.tensorResult(st, out)
}

// Backward accumulates the gradients of t into the leaves' grads; grad nil stands for 1 (a scalar t).
// Inside Graph.Build it traces the backward ops instead.
func (t *Tensor) Backward(grad *Tensor, retainGraph bool) error {
	c, err := t.begin("Backward")
	if err != nil {
		return err
	}
	defer t.end()
	cg, err := tensorArg("Backward", "grad", grad)
	if err != nil {
		return err
	}
	defer grad.endArg()
	st := C.of_tensor_backward(c.ptr, t.ptr, cg, cBool(retainGraph))
	runtime.KeepAlive(t)
	runtime.KeepAlive(grad)
	return statusError(st)
}

// ---- initialisers (in place, from the tensor's session's generator) ----

func (t *Tensor) initWith(what string, f func(*C.of_session_t, *C.of_tensor_t) *C.of_status_t) error {
	c, err := t.begin(what)
	if err != nil {
		return err
	}
	defer t.end()
	st := f(c.ptr, t.ptr)
	runtime.KeepAlive(t)
	return statusError(st)
}

// InitUniform fills the tensor uniformly in [a, b).
func (t *Tensor) InitUniform(a, b float64) error {
	return t.initWith("InitUniform", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		return C.of_init_uniform(s, p, C.double(a), C.double(b))
	})
}

// InitNormal fills the tensor from N(mean, std^2).
func (t *Tensor) InitNormal(mean, std float64) error {
	return t.initWith("InitNormal", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		return C.of_init_normal(s, p, C.double(mean), C.double(std))
	})
}

// InitConstant fills the tensor with value.
func (t *Tensor) InitConstant(value float64) error {
	return t.initWith("InitConstant", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		return C.of_init_constant(s, p, C.double(value))
	})
}

// InitKaimingUniform and InitKaimingNormal are He initialisation; opts nil: PyTorch's defaults.
func (t *Tensor) InitKaimingUniform(opts *KaimingOptions) error {
	return t.initWith("InitKaimingUniform", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		var co C.of_kaiming_options_t
		return C.of_init_kaiming_uniform(s, p, opts.cOptions(&co))
	})
}
func (t *Tensor) InitKaimingNormal(opts *KaimingOptions) error {
	return t.initWith("InitKaimingNormal", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		var co C.of_kaiming_options_t
		return C.of_init_kaiming_normal(s, p, opts.cOptions(&co))
	})
}

// InitXavierUniform and InitXavierNormal are Glorot initialisation with gain (1 as PyTorch's default).
func (t *Tensor) InitXavierUniform(gain float64) error {
	return t.initWith("InitXavierUniform", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		return C.of_init_xavier_uniform(s, p, C.double(gain))
	})
}
func (t *Tensor) InitXavierNormal(gain float64) error {
	return t.initWith("InitXavierNormal", func(s *C.of_session_t, p *C.of_tensor_t) *C.of_status_t {
		return C.of_init_xavier_normal(s, p, C.double(gain))
	})
}

// CopyTo copies the elements into dst, a []float32, []float64, []int8, []uint8, []int16, []int32,
// []int64, or []uint16 (float16 or bfloat16 bits), without allocating. The slice's element type must
// match the tensor's dtype and its length the tensor's element count (INVALID_ARGUMENT otherwise).
func (t *Tensor) CopyTo(dst any) error {
	var p unsafe.Pointer
	var n, size int
	var want []*DType
	switch d := dst.(type) {
	case []float32:
		p, n, size, want = slicePtr(d), len(d), 4, []*DType{Float32}
	case []float64:
		p, n, size, want = slicePtr(d), len(d), 8, []*DType{Float64}
	case []int8:
		p, n, size, want = slicePtr(d), len(d), 1, []*DType{Int8}
	case []uint8:
		p, n, size, want = slicePtr(d), len(d), 1, []*DType{Uint8}
	case []int16:
		p, n, size, want = slicePtr(d), len(d), 2, []*DType{Int16}
	case []int32:
		p, n, size, want = slicePtr(d), len(d), 4, []*DType{Int32}
	case []int64:
		p, n, size, want = slicePtr(d), len(d), 8, []*DType{Int64}
	case []uint16:
		p, n, size, want = slicePtr(d), len(d), 2, []*DType{Float16, BFloat16}
	default:
		return newError(CodeInvalidArgument, "CopyTo: dst is a %T, not a slice of a tensor element type", dst)
	}
	if _, err := t.begin("CopyTo"); err != nil {
		return err
	}
	defer t.end()
	var dp *C.of_dtype_t
	if err := statusError(C.of_tensor_dtype(t.ptr, &dp)); err != nil {
		return err
	}
	got := dtypeOf(dp)
	if got != want[0] && (len(want) == 1 || got != want[1]) {
		return newError(CodeInvalidArgument, "CopyTo: the tensor's dtype is %s; dst is a %T", got, dst)
	}
	var nbytes C.size_t
	if err := statusError(C.of_tensor_nbytes(t.ptr, &nbytes)); err != nil {
		return err
	}
	if int(nbytes) != n*size {
		return newError(CodeInvalidArgument, "CopyTo: dst holds %d elements, the tensor has %d", n, int(nbytes)/size)
	}
	st := C.of_tensor_copy_to_host(t.ptr, p, nbytes)
	runtime.KeepAlive(t)
	runtime.KeepAlive(dst)
	return statusError(st)
}

func slicePtr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
