package oneflow_test

import (
	"errors"
	"fmt"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

func Example() {
	s, err := of.NewSession(nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	x, _ := s.FromFloat32([]int64{2, 2}, []float32{1, 2, 3, 4})
	defer x.Close()
	y, _ := x.Matmul(x)
	defer y.Close()
	v, _ := y.Float32s()
	fmt.Println(y, v, y.DType() == of.Float32)
	// Output: Tensor(float32, (2, 2)) [7 10 15 22] true
}

func ExampleGraph_Build() {
	s, _ := of.NewSession(nil)
	defer s.Close()
	g, _ := s.NewGraph("double", nil)
	defer g.Close()
	err := g.Build(func(b *of.Builder) error {
		x, err := b.Input("x", of.Float32, []int64{of.DimUnknown})
		if err != nil {
			return err
		}
		defer x.Close()
		y, err := x.MulScalar(2)
		if err != nil {
			return err
		}
		defer y.Close()
		fmt.Println("traced", y)
		return b.AddOutput(y)
	})
	if err != nil {
		panic(err)
	}
	for _, n := range []int{2, 3} {
		x, _ := s.Arange(0, float64(n), 1, of.Float32, nil)
		out, _ := g.Run(x)
		v, _ := out[0].Float32s()
		fmt.Println(v)
		out[0].Close()
		x.Close()
	}
	// Output:
	// traced Tensor(float32, (?,), lazy)
	// [0 2]
	// [0 2 4]
}

func ExampleNoGrad() {
	s, _ := of.NewSession(nil)
	defer s.Close()
	w, _ := s.Ones(of.Float32, []int64{2}, nil)
	defer w.Close()
	_ = w.SetRequiresGrad(true)
	_ = of.NoGrad(func() error {
		y, err := w.MulScalar(3)
		if err != nil {
			return err
		}
		defer y.Close()
		fmt.Println("requires grad:", y.RequiresGrad())
		return nil
	})
	// Output: requires grad: false
}

func ExampleError() {
	s, _ := of.NewSession(nil)
	defer s.Close()
	a, _ := s.Zeros(of.Float32, []int64{2, 3}, nil)
	b, _ := s.Zeros(of.Float32, []int64{4, 3}, nil)
	defer a.Close()
	defer b.Close()
	_, err := a.Add(b)
	var e *of.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, of.IsInvalidArgument(err))
	}
	// Output: INVALID_ARGUMENT true
}
