package oneflow_test

import (
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// TestDevicesCopiesAndMemoryCounters: a copy of a transposed view is contiguous with the view's values;
// the CPU allocator's counters follow the tensors; the errors name the device.
func TestDevicesCopiesAndMemoryCounters(t *testing.T) {
	s := newSession(t)
	before, err := of.DeviceMemory(of.DeviceCPU, 0)
	must(t, err)
	x, err := s.FromFloat32([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	must(t, err)
	xt, err := x.Transpose(0, 1)
	must(t, err)
	c, err := xt.CopyToDevice(of.DeviceCPU, 0)
	must(t, err)
	expectValues(t, c, of.Float32, []int64{3, 2}, 1, 4, 2, 5, 3, 6)
	if typ, idx, err := c.Device(); err != nil || typ != of.DeviceCPU || idx != 0 {
		t.Fatalf("Device: %v %v %v", typ, idx, err)
	}
	during, err := of.DeviceMemory(of.DeviceCPU, 0)
	must(t, err)
	// Only counts that finalizers of earlier tests' tensors (which may run at any time) cannot lower.
	if during.Allocations < before.Allocations+2 || during.BytesReserved < during.BytesInUse ||
		during.PeakBytesInUse < during.BytesInUse {
		t.Fatalf("counters did not follow the tensors: before %+v, during %+v", before, during)
	}
	_, err = x.CopyToDevice(of.DeviceCUDA, 4096)
	expectCode(t, err, of.CodeUnavailable, "cuda:4096")
	_, err = x.CopyToDevice(7, 0)
	expectCode(t, err, of.CodeInvalidArgument, "device type 7")
	for _, v := range []*of.Tensor{c, xt, x} {
		v.Close()
	}
	must(t, of.EmptyDeviceCache(of.DeviceCPU, 0))
	after, err := of.DeviceMemory(of.DeviceCPU, 0)
	must(t, err)
	// Our three tensors' storage (the view shares x's) is freed, and the cache went back.
	if after.BytesInUse+2*24 > during.BytesInUse || after.BytesReserved > during.BytesReserved ||
		after.DeviceFrees < during.DeviceFrees {
		t.Fatalf("after the tensors and the cache are gone: during %+v, after %+v", during, after)
	}
	_, err = of.DeviceMemory(of.DeviceCUDA, 4096)
	expectCode(t, err, of.CodeUnavailable, "cuda:4096")
	expectCode(t, of.EmptyDeviceCache(of.DeviceCPU, -1), of.CodeInvalidArgument, "negative")
}
