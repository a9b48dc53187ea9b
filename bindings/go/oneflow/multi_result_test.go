package oneflow_test

import (
	"reflect"
	"testing"
)

// TestMultiResultOps: ops with several results (Topk, Sort) return one *Tensor per result, in the
// header's order, before the error; a failing call returns nil tensors and the error.
func TestMultiResultOps(t *testing.T) {
	s := newSession(t)
	x, err := s.FromFloat32([]int64{5}, []float32{3, 1, 4, 1.5, 9})
	must(t, err)
	defer x.Close()
	values, indices, err := x.Topk(2, 0, true, true)
	must(t, err)
	defer values.Close()
	defer indices.Close()
	v, err := values.Float32s()
	must(t, err)
	i, err := indices.Int64s()
	must(t, err)
	if !reflect.DeepEqual(v, []float32{9, 4}) || !reflect.DeepEqual(i, []int64{4, 2}) {
		t.Fatalf("topk: values %v, indices %v", v, i)
	}
	sorted, order, err := x.Sort(0, false)
	must(t, err)
	defer sorted.Close()
	defer order.Close()
	o, err := order.Int64s()
	must(t, err)
	if !reflect.DeepEqual(o, []int64{1, 3, 0, 2, 4}) {
		t.Fatalf("sort: order %v", o)
	}
	if a, b, err := x.Topk(6, 0, true, true); err == nil || a != nil || b != nil {
		t.Fatalf("topk with k past the size: %v %v %v", a, b, err)
	}
}
