package oneflow_test

import (
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// TestAutocast: inside WithAutocast(BFloat16) linear runs in bfloat16 on float32 operands and softmax
// in float32; the mode is restored afterwards; float32 is not an autocast dtype.
func TestAutocast(t *testing.T) {
	s := newSession(t)
	T := keeper(t)
	x := f32(t, s, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	w := f32(t, s, []int64{1, 3}, 1, 1, 1)
	bias := f32(t, s, []int64{1}, 0.5)
	must(t, of.WithAutocast(of.BFloat16, func() error {
		d, err := of.AutocastDType()
		if err != nil || d != of.BFloat16 {
			t.Fatalf("autocast dtype %v, %v", d, err)
		}
		y := T(x.Linear(w, bias))
		expectValues(t, y, of.BFloat16, []int64{2, 1}, 6.5, 15.5)
		if p := T(y.Softmax(0)); p.DType() != of.Float32 {
			t.Fatalf("softmax under autocast is %v, want float32", p.DType())
		}
		return nil
	}))
	if d, err := of.AutocastDType(); err != nil || d != nil {
		t.Fatalf("autocast after the scope: %v, %v", d, err)
	}
	ran := false
	err := of.WithAutocast(of.Float32, func() error { ran = true; return nil })
	expectCode(t, err, of.CodeInvalidArgument, "autocast", "float32")
	if ran {
		t.Fatal("fn ran although the autocast dtype was refused")
	}
	expectValues(t, T(x.Linear(w, bias)), of.Float32, []int64{2, 1}, 6.5, 15.5)
}
