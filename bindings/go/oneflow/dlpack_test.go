package oneflow_test

import (
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// TestDLPack: an exported tensor imported back shares its memory (a write through the import is
// seen by the original), for the versioned and the legacy struct, and a closed tensor is an error.
func TestDLPack(t *testing.T) {
	s := newSession(t)
	x, err := s.FromFloat32([]int64{2, 2}, []float32{1, 2, 3, 4})
	must(t, err)
	defer x.Close()
	for _, legacy := range []bool{false, true} {
		var back *of.Tensor
		if legacy {
			p, err := x.ToDLPackLegacy()
			must(t, err)
			back, err = s.FromDLPackLegacy(p)
			must(t, err)
		} else {
			p, err := x.ToDLPack()
			must(t, err)
			back, err = s.FromDLPack(p)
			must(t, err)
		}
		if back.DType() != of.Float32 {
			t.Fatalf("dtype %v", back.DType())
		}
		must(t, back.InitConstant(9))
		v, err := x.Float32s()
		must(t, err)
		if v[0] != 9 || v[3] != 9 {
			t.Fatalf("the import does not share the memory: %v", v)
		}
		back.Close()
		must(t, x.InitConstant(1))
	}
	closed, err := s.FromFloat32([]int64{1}, []float32{1})
	must(t, err)
	closed.Close()
	if _, err := closed.ToDLPack(); err == nil {
		t.Fatal("ToDLPack of a closed tensor succeeded")
	}
	if _, err := s.FromDLPack(nil); !of.IsInvalidArgument(err) {
		t.Fatalf("FromDLPack(nil): %v", err)
	}
}
