package oneflow_test

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// newSession is a session closed at the end of the test.
func newSession(t testing.TB) *of.Session {
	t.Helper()
	s, err := of.NewSession(nil)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// keeper returns T: T(x, err) fails the test on err and closes x at the end of the test, so that
// T(a.Add(b)) reads as an expression.
func keeper(t testing.TB) func(*of.Tensor, error) *of.Tensor {
	return func(x *of.Tensor, err error) *of.Tensor {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
}

func f32(t testing.TB, s *of.Session, dims []int64, v ...float32) *of.Tensor {
	t.Helper()
	return keeper(t)(s.FromFloat32(dims, v))
}

func values(t testing.TB, x *of.Tensor) []float64 {
	t.Helper()
	c, err := x.Cast(of.Float64)
	must(t, err)
	defer c.Close()
	v, err := c.Float64s()
	must(t, err)
	return v
}

func expectValues(t testing.TB, x *of.Tensor, dtype *of.DType, dims []int64, want ...float64) {
	t.Helper()
	if x.DType() != dtype {
		t.Fatalf("%v: dtype %v, want %v", x, x.DType(), dtype)
	}
	if got := x.Dims(); of.FormatDims(got) != of.FormatDims(dims) {
		t.Fatalf("%v: dims %s, want %s", x, of.FormatDims(got), of.FormatDims(dims))
	}
	got := values(t, x)
	if len(got) != len(want) {
		t.Fatalf("%v: %d values, want %d", x, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%v: value %d is %v, want %v (all: %v)", x, i, got[i], want[i], got)
		}
	}
}

func expectCode(t testing.TB, err error, code of.Code, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", code)
	}
	if of.CodeOf(err) != code {
		t.Fatalf("error %v, want code %v", err, code)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not name %q", err, w)
		}
	}
}

// rssBytes is the resident set size from /proc/self/statm.
func rssBytes(t testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	must(t, err)
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	must(t, err)
	return pages * int64(os.Getpagesize())
}
