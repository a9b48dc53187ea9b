package oneflow_test

// The nine scenarios of bindings' shared contract (../../../shared/BINDINGS.md at the time of
// writing), one Test function each: TestDtypeIdentity is dtype_identity, TestUnknownDims unknown_dims,
// and so on.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// ---- 1. dtype_identity ----

func TestDtypeIdentity(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	if len(of.DTypes) != 10 {
		t.Fatalf("%d dtypes", len(of.DTypes))
	}
	g, err := s.NewGraph("dtypes", nil)
	must(t, err)
	defer g.Close()
	lazy := map[*of.DType]*of.DType{}
	errAbort := errors.New("abort the build")
	err = g.Build(func(b *of.Builder) error {
		for _, d := range of.DTypes {
			x, err := b.Input("x_"+d.Name(), d, []int64{of.DimUnknown, 2})
			if err != nil {
				return err
			}
			lazy[d] = x.DType()
			x.Close()
		}
		return errAbort
	})
	if err != errAbort {
		t.Fatalf("Build: %v, want the abort", err)
	}
	if _, err := g.Run(); !of.IsClosed(err) {
		t.Fatalf("a graph whose build failed is closed: %v", err)
	}
	for _, d := range of.DTypes {
		byCode, err := of.DTypeFromCode(d.Code())
		must(t, err)
		byName, err := of.DTypeFromName(d.Name())
		must(t, err)
		code, bits, lanes, err := d.DLPack()
		must(t, err)
		byDLPack, err := of.DTypeFromDLPack(code, bits, lanes)
		must(t, err)
		promoted, err := of.Promote(d, d)
		must(t, err)
		x := T(s.Zeros(d, []int64{2}, nil))
		for what, got := range map[string]*of.DType{"code": byCode, "name": byName, "dlpack": byDLPack,
			"promotion": promoted, "tensor": x.DType(), "lazy tensor": lazy[d]} {
			if got != d {
				t.Errorf("%s: the dtype from %s is %v (%p), not the canonical %p", d, what, got, got, d)
			}
		}
		if int(bits) != 8*d.Size() || lanes != 1 {
			t.Errorf("%s: dlpack bits %d lanes %d", d, bits, lanes)
		}
	}
	for alias, want := range map[string]*of.DType{"float": of.Float32, "double": of.Float64, "half": of.Float16,
		"int": of.Int32, "long": of.Int64, "short": of.Int16} {
		if d, err := of.DTypeFromName(alias); err != nil || d != want {
			t.Errorf("alias %q: %v %v", alias, d, err)
		}
	}
	if d, _ := of.Promote(of.Uint8, of.Int8); d != of.Int16 {
		t.Errorf("uint8 with int8 promotes to %v", d)
	}
	if d, _ := of.Promote(of.Float16, of.BFloat16); d != of.Float32 {
		t.Errorf("float16 with bfloat16 promotes to %v", d)
	}
	i := T(s.FromInt32([]int64{2}, []int32{1, 2}))
	f := f32(t, s, []int64{2}, 0.5, 0.5)
	sum := T(i.Add(f))
	if sum.DType() != of.Float32 {
		t.Errorf("int32 + float32 is %v", sum.DType())
	}
	if !of.Float32.IsFloatingPoint() || of.Int64.IsFloatingPoint() || !of.Int8.IsSigned() || of.Uint8.IsSigned() ||
		!of.Uint8.IsInteger() || of.Bool.IsInteger() || of.Float64.IsComplex() {
		t.Error("dtype attributes")
	}
	_, err = of.DTypeFromCode(0)
	expectCode(t, err, of.CodeNotFound)
	_, err = of.DTypeFromName("float33")
	expectCode(t, err, of.CodeNotFound, "float33")
	_, err = of.DTypeFromDLPack(2, 32, 4)
	expectCode(t, err, of.CodeNotFound)
}

// ---- 2. unknown_dims ----

func TestUnknownDims(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	g, err := s.NewGraph("unknown", nil)
	must(t, err)
	defer g.Close()
	must(t, g.Build(func(b *of.Builder) error {
		x := T(b.Input("x", of.Float32, []int64{of.DimUnknown, 4}))
		u := T(x.Unsqueeze(0))
		if got := of.FormatDims(u.Dims()); got != "(1, ?, 4)" {
			t.Errorf("unsqueeze(0) of (?, 4) is %s", got)
		}
		if d := u.Dims(); d[1] != of.DimUnknown || of.DimIsKnown(d[1]) {
			t.Errorf("dim 1 is %d", d[1])
		}
		if _, err := u.Numel(); !of.IsInvalidArgument(err) {
			t.Errorf("numel of a lazy (1, ?, 4): %v", err)
		}
		sum := T(u.Sum([]int64{1}, false))
		if got := sum.Dims(); of.FormatDims(got) != "(1, 4)" || !of.DimIsKnown(got[0]) {
			t.Errorf("its sum over dim 1 is %s", of.FormatDims(got))
		}
		if !sum.IsLazy() || !strings.Contains(sum.String(), "lazy") {
			t.Errorf("%v is not lazy", sum)
		}
		return b.AddOutput(sum)
	}))
	for _, n := range []int64{1, 2, 5} {
		data := make([]float32, 4*n)
		for i := range data {
			data[i] = float32(i)
		}
		x := f32(t, s, []int64{n, 4}, data...)
		out, err := g.Run(x)
		must(t, err)
		want := make([]float64, 4)
		for i, v := range data {
			want[i%4] += float64(v)
		}
		expectValues(t, out[0], of.Float32, []int64{1, 4}, want...)
		out[0].Close()
	}

	N, err := s.DimSymbol("N")
	must(t, err)
	M, err := s.DimSymbol("M")
	must(t, err)
	N2, err := s.DimSymbol("N")
	must(t, err)
	if N == M || N != N2 || !of.DimIsSymbol(N) || of.DimIsKnown(N) || of.FormatDim(N) != "N" || of.FormatDim(M) != "M" {
		t.Fatalf("symbols N %d M %d again %d (%s, %s)", N, M, N2, of.FormatDim(N), of.FormatDim(M))
	}
	if name, err := of.DimSymbolName(M); err != nil || name != "M" {
		t.Fatalf("DimSymbolName: %q %v", name, err)
	}
	_, err = of.DimSymbolName(3)
	expectCode(t, err, of.CodeInvalidArgument)
	if of.FormatDims([]int64{N, 3, of.DimUnknown}) != "(N, 3, ?)" {
		t.Fatal(of.FormatDims([]int64{N, 3, of.DimUnknown}))
	}

	h, err := s.NewGraph("symbols", nil)
	must(t, err)
	defer h.Close()
	must(t, h.Build(func(b *of.Builder) error {
		a := T(b.Input("a", of.Float32, []int64{N, 2}))
		c := T(b.Input("c", of.Float32, []int64{N, 2}))
		if of.FormatDims(a.Dims()) != "(N, 2)" {
			t.Errorf("input a is %s", of.FormatDims(a.Dims()))
		}
		return b.AddOutput(T(a.Add(c)))
	}))
	a2 := f32(t, s, []int64{2, 2}, 1, 2, 3, 4)
	a3 := f32(t, s, []int64{3, 2}, 1, 2, 3, 4, 5, 6)
	out, err := h.Run(a2, a2)
	must(t, err)
	expectValues(t, out[0], of.Float32, []int64{2, 2}, 2, 4, 6, 8)
	out[0].Close()
	_, err = h.Run(a2, a3)
	expectCode(t, err, of.CodeInvalidArgument, "c")
	t.Logf("contradicting N: %v", err)
}

// ---- 3. eager_ops ----

func TestEagerOps(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	a := f32(t, s, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	row := f32(t, s, []int64{3}, 10, 20, 30)
	expectValues(t, T(a.Add(row)), of.Float32, []int64{2, 3}, 11, 22, 33, 14, 25, 36)
	expectValues(t, T(a.Mul(row)), of.Float32, []int64{2, 3}, 10, 40, 90, 40, 100, 180)
	expectValues(t, T(a.SubScalar(1)), of.Float32, []int64{2, 3}, 0, 1, 2, 3, 4, 5)
	expectValues(t, T(a.PowScalar(2)), of.Float32, []int64{2, 3}, 1, 4, 9, 16, 25, 36)
	// Promotion: int64 with float64 is float64; an integral scalar keeps int64; true division is float32.
	i := T(s.FromInt64([]int64{3}, []int64{1, 2, 3}))
	d := T(s.FromFloat64([]int64{3}, []float64{0.5, 0.5, 0.5}))
	expectValues(t, T(i.Add(d)), of.Float64, []int64{3}, 1.5, 2.5, 3.5)
	expectValues(t, T(i.AddScalar(2)), of.Int64, []int64{3}, 3, 4, 5)
	expectValues(t, T(i.Div(i)), of.Float32, []int64{3}, 1, 1, 1)
	expectValues(t, T(i.GtScalar(1)), of.Bool, []int64{3}, 0, 1, 1)

	// matmul (2, 3) @ (3, 2)
	b := f32(t, s, []int64{3, 2}, 1, 0, 0, 1, 1, 1)
	expectValues(t, T(a.Matmul(b)), of.Float32, []int64{2, 2}, 4, 5, 10, 11)
	// linear: x @ w^T + bias
	w := f32(t, s, []int64{1, 3}, 1, 1, 1)
	bias := f32(t, s, []int64{1}, 0.5)
	expectValues(t, T(a.Linear(w, bias)), of.Float32, []int64{2, 1}, 6.5, 15.5)
	expectValues(t, T(a.Linear(w, nil)), of.Float32, []int64{2, 1}, 6, 15)

	// conv2d: a 3x3 image 1..9, a 2x2 kernel of ones: window sums; with padding 1 and stride 2 the corners.
	img := f32(t, s, []int64{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	k := f32(t, s, []int64{1, 1, 2, 2}, 1, 1, 1, 1)
	expectValues(t, T(img.Conv2d(k, nil, nil)), of.Float32, []int64{1, 1, 2, 2}, 12, 16, 24, 28)
	o := of.NewConv2dOptions()
	if o.Stride != [2]int64{1, 1} || o.Groups != 1 || o.Padding != [2]int64{0, 0} {
		t.Fatalf("conv2d defaults %+v", o)
	}
	o.Padding = [2]int64{1, 1}
	o.Stride = [2]int64{2, 2}
	expectValues(t, T(img.Conv2d(k, nil, o)), of.Float32, []int64{1, 1, 2, 2}, 1, 5, 11, 28)
	po := of.NewPool2dOptions()
	po.KernelSize = [2]int64{2, 2}
	po.Stride = [2]int64{1, 1}
	expectValues(t, T(img.MaxPool2d(po)), of.Float32, []int64{1, 1, 2, 2}, 5, 6, 8, 9)
	expectValues(t, T(img.AvgPool2d(po)), of.Float32, []int64{1, 1, 2, 2}, 3, 4, 6, 7)

	// reductions
	expectValues(t, T(a.Sum(nil, false)), of.Float32, []int64{}, 21)
	expectValues(t, T(a.Sum([]int64{1}, true)), of.Float32, []int64{2, 1}, 6, 15)
	expectValues(t, T(a.Mean([]int64{0}, false)), of.Float32, []int64{3}, 2.5, 3.5, 4.5)
	expectValues(t, T(a.Max([]int64{1}, false)), of.Float32, []int64{2}, 3, 6)
	expectValues(t, T(a.Argmax(0, false)), of.Int64, []int64{3}, 1, 1, 1)
	expectValues(t, T(a.Var([]int64{1}, 1, false)), of.Float32, []int64{2}, 1, 1)
	expectValues(t, T(i.Sum(nil, false)), of.Int64, []int64{}, 6)

	// views
	expectValues(t, T(a.Transpose(0, 1)), of.Float32, []int64{3, 2}, 1, 4, 2, 5, 3, 6)
	expectValues(t, T(a.Reshape([]int64{3, -1})), of.Float32, []int64{3, 2}, 1, 2, 3, 4, 5, 6)
	expectValues(t, T(a.Narrow(1, 1, 2)), of.Float32, []int64{2, 2}, 2, 3, 5, 6)
	expectValues(t, T(a.Permute([]int64{1, 0})), of.Float32, []int64{3, 2}, 1, 4, 2, 5, 3, 6)
	expectValues(t, T(row.Expand([]int64{2, 3})), of.Float32, []int64{2, 3}, 10, 20, 30, 10, 20, 30)
	expectValues(t, T(a.Flatten(0, -1)), of.Float32, []int64{6}, 1, 2, 3, 4, 5, 6)
	expectValues(t, T(s.Cat([]*of.Tensor{row, row}, 0)), of.Float32, []int64{6}, 10, 20, 30, 10, 20, 30)
	expectValues(t, T(s.Stack([]*of.Tensor{row, row}, 0)), of.Float32, []int64{2, 3}, 10, 20, 30, 10, 20, 30)
	sm := T(f32(t, s, []int64{2}, 0, 0).Softmax(0))
	expectValues(t, sm, of.Float32, []int64{2}, 0.5, 0.5)
	cond := T(s.FromBool([]int64{3}, []bool{true, false, true}))
	expectValues(t, T(cond.Where(row, T(row.Neg()))), of.Float32, []int64{3}, 10, -20, 30)
	bools, err := T(cond.LogicalNot()).Bools()
	must(t, err)
	if fmt.Sprint(bools) != "[false true false]" {
		t.Fatal(bools)
	}

	// the other element types in and out
	i8 := T(s.FromInt8([]int64{2}, []int8{-1, 2}))
	u8 := T(s.FromUint8([]int64{2}, []uint8{255, 2}))
	i16 := T(s.FromInt16([]int64{2}, []int16{-300, 2}))
	expectValues(t, i8, of.Int8, []int64{2}, -1, 2)
	expectValues(t, u8, of.Uint8, []int64{2}, 255, 2)
	expectValues(t, i16, of.Int16, []int64{2}, -300, 2)
	h := T(s.FromFloat16Bits([]int64{2}, []uint16{0x3c00, 0xc000})) // 1, -2
	expectValues(t, h, of.Float16, []int64{2}, 1, -2)
	bf := T(s.FromBFloat16Bits([]int64{1}, []uint16{0x3f80})) // 1
	bits, err := bf.BFloat16Bits()
	must(t, err)
	if bits[0] != 0x3f80 {
		t.Fatalf("bfloat16 bits %x", bits)
	}
	hb, err := h.Float16Bits()
	must(t, err)
	if hb[1] != 0xc000 {
		t.Fatalf("float16 bits %x", hb)
	}
	i32s, err := T(s.Arange(0, 3, 1, of.Int32, nil)).Int32s()
	must(t, err)
	if fmt.Sprint(i32s) != "[0 1 2]" {
		t.Fatal(i32s)
	}
	full := T(s.Full(of.Float64, []int64{2}, 2.5, nil))
	expectValues(t, full, of.Float64, []int64{2}, 2.5, 2.5)
	if v, err := T(a.Sum(nil, false)).Item(); err != nil || v != 21 {
		t.Fatalf("Item: %v %v", v, err)
	}
	if _, err := a.Int64s(); !of.IsInvalidArgument(err) {
		t.Fatalf("Int64s of a float32 tensor: %v", err)
	}
	raw, err := row.Bytes()
	must(t, err)
	if len(raw) != 12 {
		t.Fatal(len(raw))
	}
	if typ, idx, err := a.Device(); err != nil || typ != of.DeviceCPU || idx != 0 {
		t.Fatalf("device %d %d %v", typ, idx, err)
	}
	if n, err := a.NBytes(); err != nil || n != 24 {
		t.Fatal(n, err)
	}
	if a.String() != "Tensor(float32, (2, 3))" {
		t.Fatal(a.String())
	}

	// a shape mismatch names both shapes
	_, err = a.Add(f32(t, s, []int64{4, 3}, make([]float32, 12)...))
	expectCode(t, err, of.CodeInvalidArgument, "(2, 3)", "(4, 3)")
	t.Logf("shape mismatch: %v", err)
}

// ---- 4. autograd ----

func TestAutograd(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	x := f32(t, s, []int64{3}, 1, 2, 3)
	must(t, x.SetRequiresGrad(true))
	if !x.RequiresGrad() || !x.IsLeaf() {
		t.Fatal("x is a leaf that requires grad")
	}
	// y = sum(x * x + 3 x): dy/dx = 2 x + 3
	sq := T(x.Mul(x))
	lin := T(x.MulScalar(3))
	y := T(T(sq.Add(lin)).Sum(nil, false))
	if y.IsLeaf() || !y.RequiresGrad() {
		t.Fatal("y is recorded")
	}
	must(t, y.Backward(nil, false))
	g, err := x.Grad()
	must(t, err)
	expectValues(t, T(g, nil), of.Float32, []int64{3}, 5, 7, 9)
	// a second expression accumulates into the grad
	z := T(T(x.Exp()).Sum(nil, false))
	must(t, z.Backward(nil, false))
	g, err = x.Grad()
	must(t, err)
	expectValues(t, T(g, nil), of.Float32, []int64{3}, 5+math.E, 7+math.Exp(2), 9+math.Exp(3))
	must(t, x.SetGrad(nil))
	if g, err := x.Grad(); err != nil || g != nil {
		t.Fatalf("cleared grad: %v %v", g, err)
	}
	// a second backward through a freed graph is an error
	expectCode(t, y.Backward(nil, false), of.CodeFailedPrecondition)

	// no-grad: nothing recorded, and the mode is back afterwards
	must(t, of.NoGrad(func() error {
		on, err := of.GradEnabled()
		if err != nil || on {
			t.Errorf("grad mode in NoGrad: %v %v", on, err)
		}
		n := T(x.MulScalar(2))
		if n.RequiresGrad() {
			t.Error("an op in NoGrad requires grad")
		}
		return nil
	}))
	must(t, of.WithGradEnabled(true, func() error {
		if on, _ := of.GradEnabled(); !on {
			t.Error("grad mode is on by default")
		}
		return nil
	}))
	// detach: a leaf sharing the data, outside the graph
	d := T(x.Detach())
	if d.RequiresGrad() || !d.IsLeaf() {
		t.Fatal("detach")
	}
	expectValues(t, d, of.Float32, []int64{3}, 1, 2, 3)
	dd := T(d.MulScalar(2))
	if dd.RequiresGrad() {
		t.Fatal("an op on a detached tensor requires grad")
	}
	// set_grad with a given tensor
	must(t, x.SetGrad(f32(t, s, []int64{3}, 1, 1, 1)))
	g, err = x.Grad()
	must(t, err)
	expectValues(t, T(g, nil), of.Float32, []int64{3}, 1, 1, 1)
	expectCode(t, T(s.FromInt64([]int64{1}, []int64{1})).SetRequiresGrad(true), of.CodeInvalidArgument)
}

// ---- 5. training ----

type tinyNet struct{ w1, b1, w2, b2 *of.Tensor }

func newTinyNet(t *testing.T, s *of.Session) tinyNet {
	mk := func(dims []int64, v ...float32) *of.Tensor {
		x := f32(t, s, dims, v...)
		must(t, x.SetRequiresGrad(true))
		return x
	}
	return tinyNet{
		w1: mk([]int64{4, 3}, 0.1, -0.2, 0.3, 0.4, 0.5, -0.6, -0.7, 0.8, 0.9, 0.2, 0.1, -0.3),
		b1: mk([]int64{4}, 0.01, 0.02, -0.03, 0.04),
		w2: mk([]int64{2, 4}, 0.3, -0.1, 0.2, 0.5, -0.4, 0.6, 0.1, -0.2),
		b2: mk([]int64{2}, 0.05, -0.05),
	}
}

func (n tinyNet) params() []*of.Tensor { return []*of.Tensor{n.w1, n.b1, n.w2, n.b2} }

func (n tinyNet) loss(t *testing.T, x, y *of.Tensor) *of.Tensor {
	T := keeper(t)
	h := T(T(x.Linear(n.w1, n.b1)).Relu())
	logits := T(h.Linear(n.w2, n.b2))
	return T(logits.CrossEntropy(y, nil))
}

func TestTraining(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	x := f32(t, s, []int64{4, 3}, 1, 0, 2, -1, 1, 0, 0.5, 0.5, -1, 2, -2, 1)
	y := T(s.FromInt64([]int64{4}, []int64{0, 1, 1, 0}))
	const steps = 4
	for _, kind := range []string{"sgd", "adam"} {
		newOpt := func(net tinyNet) *of.Optimizer {
			var o *of.Optimizer
			var err error
			if kind == "sgd" {
				so := of.NewSGDOptions()
				so.LR, so.Momentum = 0.5, 0.9
				o, err = s.NewSGD(net.params(), so)
			} else {
				ao := of.NewAdamOptions()
				if ao.Beta1 != 0.9 || ao.Beta2 != 0.999 {
					t.Fatalf("adam defaults %+v", ao)
				}
				ao.LR = 0.05
				o, err = s.NewAdam(net.params(), ao)
			}
			must(t, err)
			t.Cleanup(func() { o.Close() })
			return o
		}
		// eagerly
		eager := newTinyNet(t, s)
		opt := newOpt(eager)
		var eagerLoss []float64
		for i := 0; i < steps; i++ {
			must(t, opt.ZeroGrad())
			l := eager.loss(t, x, y)
			must(t, l.Backward(nil, false))
			must(t, opt.Step())
			v, err := l.Item()
			must(t, err)
			eagerLoss = append(eagerLoss, v)
		}
		// through a lazy graph
		lazyNet := newTinyNet(t, s)
		lopt := newOpt(lazyNet)
		g, err := s.NewGraph("train_"+kind, nil)
		must(t, err)
		defer g.Close()
		must(t, g.Build(func(b *of.Builder) error {
			for i, p := range lazyNet.params() {
				if err := b.AddParameter(p, fmt.Sprintf("p%d", i)); err != nil {
					return err
				}
			}
			lx := T(b.Input("x", of.Float32, []int64{of.DimUnknown, 3}))
			ly := T(b.Input("y", of.Int64, []int64{of.DimUnknown}))
			l := lazyNet.loss(t, lx, ly)
			if err := l.Backward(nil, false); err != nil {
				return err
			}
			if err := b.AddOptimizer(lopt); err != nil {
				return err
			}
			return b.AddOutput(l)
		}))
		for i := 0; i < steps; i++ {
			out, err := g.Run(x, y)
			must(t, err)
			v, err := out[0].Item()
			must(t, err)
			out[0].Close()
			if math.Abs(v-eagerLoss[i]) > 1e-5 {
				t.Errorf("%s step %d: graph loss %v, eager %v", kind, i, v, eagerLoss[i])
			}
		}
		if eagerLoss[steps-1] >= eagerLoss[0] {
			t.Errorf("%s: the loss did not fall: %v", kind, eagerLoss)
		}
		t.Logf("%s losses %v", kind, eagerLoss)
		// both nets end with the same weights
		for i, p := range eager.params() {
			a, b := values(t, p), values(t, lazyNet.params()[i])
			for j := range a {
				if math.Abs(a[j]-b[j]) > 1e-5 {
					t.Fatalf("%s: param %d[%d] eager %v graph %v", kind, i, j, a[j], b[j])
				}
			}
		}
		lr, err := lopt.LR()
		must(t, err)
		must(t, lopt.SetLR(lr/2))
		if lr2, _ := lopt.LR(); lr2 != lr/2 {
			t.Fatalf("lr %v", lr2)
		}
	}

	// safetensors round trip
	net := newTinyNet(t, s)
	names := []string{"w1", "b1", "w2", "b2"}
	path := filepath.Join(t.TempDir(), "tiny.safetensors")
	must(t, of.SaveSafetensors(path, names, net.params()))
	loaded, err := s.LoadSafetensors(path)
	must(t, err)
	if len(loaded) != 4 {
		t.Fatalf("%d tensors loaded", len(loaded))
	}
	for i, nt := range loaded {
		if nt.Name != names[i] {
			t.Fatalf("tensor %d is %q", i, nt.Name)
		}
		want, _ := net.params()[i].Float32s()
		got, err := nt.Tensor.Float32s()
		must(t, err)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %v, saved %v", nt.Name, got, want)
		}
		nt.Tensor.Close()
	}
	dst := []*of.Tensor{
		T(s.Zeros(of.Float32, []int64{4, 3}, nil)), T(s.Zeros(of.Float32, []int64{4}, nil)),
		T(s.Zeros(of.Float32, []int64{2, 4}, nil)), T(s.Zeros(of.Float32, []int64{2}, nil)),
	}
	must(t, of.LoadSafetensorsInto(path, names, dst, true))
	for i := range dst {
		a, _ := dst[i].Float32s()
		b, _ := net.params()[i].Float32s()
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("load_into %s: %v, saved %v", names[i], a, b)
		}
	}
	// initialisers fill in place
	w := T(s.Zeros(of.Float32, []int64{8, 4}, nil))
	ko := of.NewKaimingOptions()
	if ko.Mode != of.FanModeFanIn || ko.Nonlinearity != of.NonlinearityLeakyRelu {
		t.Fatalf("kaiming defaults %+v", ko)
	}
	ko.Nonlinearity = of.NonlinearityRelu
	for _, init := range []func() error{
		func() error { return w.InitKaimingNormal(ko) }, func() error { return w.InitKaimingUniform(nil) },
		func() error { return w.InitXavierUniform(1) }, func() error { return w.InitXavierNormal(1) },
		func() error { return w.InitNormal(0, 1) }, func() error { return w.InitUniform(-1, 1) },
	} {
		must(t, init())
		if v := values(t, w); v[0] == 0 && v[1] == 0 {
			t.Fatal("an initialiser wrote zeros")
		}
	}
	must(t, w.InitConstant(0.25))
	if v := values(t, w); v[31] != 0.25 {
		t.Fatal(v)
	}
	must(t, s.ManualSeed(7))
	r1 := values(t, T(s.Randn(of.Float32, []int64{3}, nil)))
	must(t, s.ManualSeed(7))
	r2 := values(t, T(s.Rand(of.Float32, []int64{3}, nil)))
	must(t, s.ManualSeed(7))
	r3 := values(t, T(s.Randn(of.Float32, []int64{3}, nil)))
	if fmt.Sprint(r1) != fmt.Sprint(r3) || fmt.Sprint(r1) == fmt.Sprint(r2) {
		t.Fatalf("seeded draws %v %v %v", r1, r2, r3)
	}
}

// ---- 6. lazy_graph_free_tensor ----

func TestLazyGraphFreeTensor(t *testing.T) {
	s := newSession(t)
	base := of.AdoptedBuffersFreed()
	g, err := s.NewGraph("seed", nil)
	must(t, err)
	must(t, g.Build(func(b *of.Builder) error {
		x, err := b.Input("x", of.Float32, []int64{of.DimUnknown, 4})
		if err != nil {
			return err
		}
		defer x.Close()
		y, err := x.GtScalar(0.5)
		if err != nil {
			return err
		}
		defer y.Close()
		if y.DType() != of.Bool || !y.IsLazy() {
			t.Errorf("x > 0.5 is %v", y)
		}
		// a mask made inside the build: eager, from a C buffer the library frees (and counts)
		buf, err := of.NewCBuffer(4)
		if err != nil {
			return err
		}
		copy(buf.Bytes(), []byte{1, 0, 1, 1})
		mask, err := s.Adopt(of.Bool, []int64{4}, buf)
		if err != nil {
			return err
		}
		defer mask.Close() // the session keeps it for the graph
		if mask.IsLazy() {
			t.Error("a tensor made during a build is eager")
		}
		z, err := y.LogicalAnd(mask)
		if err != nil {
			return err
		}
		defer z.Close()
		if err := b.AddOutput(y); err != nil {
			return err
		}
		return b.AddOutput(z)
	}))
	if n, err := g.FreeTensorCount(); err != nil || n != 2 {
		t.Fatalf("free tensors: %d %v", n, err)
	}
	names, err := g.FreeTensorNames()
	must(t, err)
	if fmt.Sprint(names) != "[free_0 free_1]" {
		t.Fatalf("free tensor names %v", names)
	}
	if n, _ := g.InputCount(); n != 1 {
		t.Fatal(n)
	}
	if n, _ := g.OutputCount(); n != 2 {
		t.Fatal(n)
	}
	dump, err := g.Dump()
	must(t, err)
	if strings.Count(dump, "non-trainable") != 2 {
		t.Fatalf("dump:\n%s", dump)
	}
	mask := []bool{true, false, true, true}
	for _, n := range []int{2, 3, 7} {
		data := make([]float32, 4*n)
		for i := range data {
			data[i] = float32((i*37)%10) / 10
		}
		x := f32(t, s, []int64{int64(n), 4}, data...)
		out, err := g.Run(x)
		must(t, err)
		gt, err := out[0].Bools()
		must(t, err)
		and, err := out[1].Bools()
		must(t, err)
		for i, v := range data {
			if gt[i] != (v > 0.5) || and[i] != (v > 0.5 && mask[i%4]) {
				t.Fatalf("batch %d element %d: %v > 0.5 gives %v, and mask %v", n, i, v, gt[i], and[i])
			}
		}
		out[0].Close()
		out[1].Close()
	}
	st, err := g.MemoryStats()
	must(t, err)
	if st.CompileCount != 3 || st.NodeCount == 0 {
		t.Fatalf("memory stats %+v", st)
	}
	runtime.GC()
	if got := of.AdoptedBuffersFreed() - base; got != 0 {
		t.Fatalf("the mask was freed (%d) while the graph lives", got)
	}
	must(t, g.Close())
	if got := of.AdoptedBuffersFreed() - base; got != 1 {
		t.Fatalf("closing the graph freed %d adopted buffers, want 1", got)
	}
	must(t, g.Close()) // idempotent
	if _, err := g.Run(); !of.IsClosed(err) {
		t.Fatalf("Run after Close: %v", err)
	}
}

// ---- 7. errors ----

func TestErrors(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	x := f32(t, s, []int64{2, 3}, 1, 2, 3, 4, 5, 6)
	cases := []struct {
		what  string
		err   error
		code  of.Code
		words []string
	}{}
	add := func(what string, err error, code of.Code, words ...string) {
		cases = append(cases, struct {
			what  string
			err   error
			code  of.Code
			words []string
		}{what, err, code, words})
	}
	_, err := s.FromFloat32([]int64{2, 2}, []float32{1, 2, 3})
	add("from_data size", err, of.CodeInvalidArgument, "12 bytes", "(2, 2)")
	_, err = x.Matmul(x)
	add("matmul shapes", err, of.CodeInvalidArgument, "matmul", "(2, 3)")
	_, err = x.Sum([]int64{5}, false)
	add("sum dim", err, of.CodeInvalidArgument, "5")
	_, err = x.Reshape([]int64{4, 4})
	add("reshape", err, of.CodeInvalidArgument, "reshape")
	_, err = s.Cat(nil, 0)
	add("cat of nothing", err, of.CodeInvalidArgument, "cat")
	_, err = x.Conv2d(nil, nil, nil)
	add("conv2d without weight", err, of.CodeInvalidArgument, "weight")
	_, err = T(s.Zeros(of.Float32, []int64{1, 1, 4, 4}, nil)).MaxPool2d(of.NewPool2dOptions())
	add("pool without kernel", err, of.CodeInvalidArgument, "kernel_size")
	_, err = s.LoadSafetensors("/nonexistent/dir/w.safetensors")
	add("missing file", err, of.CodeNotFound, "/nonexistent/dir/w.safetensors")
	_, err = s.DimSymbol("?")
	add("bad symbol", err, of.CodeInvalidArgument, "?")
	_, err = s.Full(of.Int8, []int64{1}, 300, nil)
	add("full out of range", err, of.CodeInvalidArgument, "300")
	_, err = x.Int32s()
	add("copy out as the wrong dtype", err, of.CodeInvalidArgument, "float32", "int32")
	add("copy out into a short slice", x.CopyTo(make([]float32, 5)), of.CodeInvalidArgument, "5", "6")
	add("copy out into another type", x.CopyTo(make([]int64, 6)), of.CodeInvalidArgument, "float32", "[]int64")
	dst := make([]float32, 6)
	must(t, x.CopyTo(dst))
	if fmt.Sprint(dst) != "[1 2 3 4 5 6]" {
		t.Fatal(dst)
	}
	opt, err := s.NewSGD([]*of.Tensor{x}, nil)
	must(t, err)
	defer opt.Close()
	add("negative lr", opt.SetLR(-1), of.CodeInvalidArgument, "lr")
	g, err := s.NewGraph("errors", nil)
	must(t, err)
	defer g.Close()
	_, err = g.Run()
	add("run before build", err, of.CodeFailedPrecondition, "errors")
	for _, c := range cases {
		t.Logf("%s: %v", c.what, c.err)
		var e *of.Error
		if !errors.As(c.err, &e) {
			t.Errorf("%s: %v is not an *oneflow.Error", c.what, c.err)
			continue
		}
		if e.Code != c.code {
			t.Errorf("%s: code %v, want %v (%v)", c.what, e.Code, c.code, e)
		}
		for _, w := range c.words {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%s: message %q does not name %q", c.what, e.Message, w)
			}
		}
	}
	_, err = s.FromFloat32([]int64{3}, []float32{1})
	if !errors.Is(err, of.ErrInvalidArgument) || errors.Is(err, of.ErrNotFound) || !of.IsInvalidArgument(err) {
		t.Errorf("errors.Is by code: %v", err)
	}
	if of.Code(42).String() != "code 42" || of.CodeInvalidArgument.String() != "INVALID_ARGUMENT" {
		t.Errorf("code names %q %q", of.Code(42), of.CodeInvalidArgument)
	}
	if of.CodeOf(fmt.Errorf("wrapped: %w", err)) != of.CodeInvalidArgument {
		t.Error("a wrapped error keeps its code")
	}
	if of.ReductionSum.String() != "SUM" || of.Reduction(9).String() != "Reduction(9)" {
		t.Error("enum names")
	}
	must(t, of.CheckVersion())
	if maj, min, _ := of.Version(); maj != of.HeaderVersionMajor || min != of.HeaderVersionMinor {
		t.Errorf("library %d.%d, header %d.%d (%s)", maj, min, of.HeaderVersionMajor, of.HeaderVersionMinor, of.VersionString())
	}
	ops, err := of.OpNames()
	must(t, err)
	if len(ops) < 70 {
		t.Errorf("%d ops registered", len(ops))
	}
	_ = of.CUDAIsBuilt()
}

// ---- 8. close_stress ----

func TestCloseStress(t *testing.T) {
	T := keeper(t)
	cycles, abandoned := 1_000_000, 100_000
	if raceEnabled || testing.Short() {
		cycles, abandoned = 50_000, 10_000
	}
	s := newSession(t)
	data := []float32{1, 2, 3, 4}
	out := make([]float32, 4)
	cycle := func(i int) {
		x, err := s.FromFloat32([]int64{4}, data)
		if err != nil {
			t.Fatal(err)
		}
		y, err := x.AddScalar(1)
		if err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			v, err := y.Float32s()
			if err != nil || v[3] != 5 {
				t.Fatalf("cycle %d: %v %v", i, v, err)
			}
			copy(out, v)
		}
		y.Close()
		x.Close()
	}
	warm := cycles / 10
	for i := 0; i < warm; i++ {
		cycle(i)
	}
	runtime.GC()
	debug.FreeOSMemory()
	before := rssBytes(t)
	start := time.Now()
	for i := warm; i < cycles; i++ {
		cycle(i)
	}
	runtime.GC()
	debug.FreeOSMemory()
	after := rssBytes(t)
	t.Logf("%d create/use/close cycles (%d after warm-up) in %v: RSS %.1f MiB -> %.1f MiB", cycles, cycles-warm,
		time.Since(start), float64(before)/(1<<20), float64(after)/(1<<20))
	// The race detector's shadow memory grows with the addresses the heap touches: resident memory is
	// only checked without it.
	if !raceEnabled && after-before > 4<<20 {
		t.Errorf("resident memory grew by %.1f MiB", float64(after-before)/(1<<20))
	}

	// double close, use after close
	x := f32(t, s, []int64{2}, 1, 2)
	must(t, x.Close())
	must(t, x.Close())
	if _, err := x.AddScalar(1); !of.IsClosed(err) || !errors.Is(err, of.ErrClosed) || !of.IsFailedPrecondition(err) {
		t.Fatalf("use after close: %v", err)
	}
	if x.DType() != nil || x.Dims() != nil || x.String() != "Tensor(closed)" {
		t.Fatal("queries of a closed tensor")
	}
	y := f32(t, s, []int64{2}, 1, 2)
	if _, err := y.Add(x); !of.IsClosed(err) || !strings.Contains(err.Error(), "argument b") {
		t.Fatalf("a closed argument: %v", err)
	}
	var nilTensor *of.Tensor
	if _, err := nilTensor.Relu(); !of.IsClosed(err) {
		t.Fatalf("a nil receiver: %v", err)
	}
	t.Logf("use after close: %v", func() error { _, err := x.AddScalar(1); return err }())

	// the session: closed, its tensors keep working, its methods fail
	s2, err := of.NewSession(nil)
	must(t, err)
	kept := T(s2.Ones(of.Float32, []int64{2}, nil))
	must(t, s2.Close())
	must(t, s2.Close())
	if _, err := s2.Zeros(of.Float32, []int64{1}, nil); !of.IsClosed(err) {
		t.Fatalf("a closed session: %v", err)
	}
	expectValues(t, T(kept.MulScalar(3)), of.Float32, []int64{2}, 3, 3)

	// abandoned tensors over adopted buffers: released by the finalizer backstop
	base := of.AdoptedBuffersFreed()
	for i := 0; i < abandoned; i++ {
		buf, err := of.NewCBuffer(16)
		must(t, err)
		if _, err := s.Adopt(of.Float32, []int64{4}, buf); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for of.AdoptedBuffersFreed()-base < int64(abandoned) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	if got := of.AdoptedBuffersFreed() - base; got != int64(abandoned) {
		t.Fatalf("%d of %d abandoned tensors released", got, abandoned)
	}
	// an abandoned session, graph and optimizer are released too (no crash, nothing to count)
	func() {
		s3, _ := of.NewSession(nil)
		w, _ := s3.Ones(of.Float32, []int64{2}, nil)
		_ = w.SetRequiresGrad(true)
		_, _ = s3.NewSGD([]*of.Tensor{w}, nil)
		_, _ = s3.NewGraph("abandoned", nil)
	}()
	runtime.GC()
	runtime.GC()
}

// ---- 9. threads ----

func TestThreads(t *testing.T) {
	T := keeper(t)
	s := newSession(t)
	g, err := s.NewGraph("shared", nil)
	must(t, err)
	defer g.Close()
	w := f32(t, s, []int64{2, 2}, 1, 2, 3, 4)
	must(t, g.Build(func(b *of.Builder) error {
		x := T(b.Input("x", of.Float32, []int64{of.DimUnknown, 2}))
		return b.AddOutput(T(T(x.Matmul(w)).AddScalar(1)))
	}))
	goroutines, iters := 8, 100
	if raceEnabled {
		iters = 30
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for gi := 0; gi < goroutines; gi++ {
		wg.Add(1)
		go func(gi int) {
			defer wg.Done()
			fail := func(format string, args ...any) { errs <- fmt.Errorf(format, args...) }
			for i := 0; i < iters; i++ {
				v := float32(gi*1000 + i)
				x, err := s.FromFloat32([]int64{1, 2}, []float32{v, 1})
				if err != nil {
					fail("%v", err)
					return
				}
				y, err := x.Matmul(w) // (v + 3, 2v + 4)
				if err != nil {
					fail("%v", err)
					return
				}
				got, err := y.Float32s()
				if err != nil || got[0] != v+3 || got[1] != 2*v+4 {
					fail("goroutine %d: eager %v %v", gi, got, err)
				}
				y.Close()
				// the graph, run by everyone in turn, on batch sizes 1..3
				n := 1 + (gi+i)%3
				batch := make([]float32, 2*n)
				for j := range batch {
					batch[j] = v
				}
				xb, err := s.FromFloat32([]int64{int64(n), 2}, batch)
				if err != nil {
					fail("%v", err)
					return
				}
				out, err := g.Run(xb)
				if err != nil {
					fail("goroutine %d: run: %v", gi, err)
					return
				}
				r, err := out[0].Float32s()
				if err != nil || len(r) != 2*n || r[0] != 4*v+1 || r[1] != 6*v+1 {
					fail("goroutine %d: graph %v %v", gi, r, err)
				}
				out[0].Close()
				xb.Close()
				// grad mode is per thread: NoGrad pins the goroutine
				if err := of.NoGrad(func() error {
					if on, _ := of.GradEnabled(); on {
						return fmt.Errorf("grad mode on inside NoGrad")
					}
					return nil
				}); err != nil {
					fail("%v", err)
				}
				x.Close()
			}
		}(gi)
	}
	// meanwhile: goroutines racing to close one tensor while others use it
	shared := f32(t, s, []int64{64}, make([]float32, 64)...)
	var cwg sync.WaitGroup
	for i := 0; i < 4; i++ {
		cwg.Add(1)
		go func(i int) {
			defer cwg.Done()
			for j := 0; j < 50; j++ {
				if y, err := shared.AddScalar(1); err == nil {
					y.Close()
				} else if !of.IsClosed(err) {
					errs <- err
				}
				if i == 3 && j == 25 {
					shared.Close()
				}
			}
		}(i)
	}
	wg.Wait()
	cwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A panic inside Graph.Build closes the graph, so that the OS thread is left without an open build: a
// later build on the same goroutine (and thread) works.
func TestBuildPanicClosesGraph(t *testing.T) {
	s := newSession(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, err := s.NewGraph("panics", nil)
	must(t, err)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		_ = g.Build(func(b *of.Builder) error { panic("in the build") })
	}()
	if _, err := g.Run(); !of.IsClosed(err) {
		t.Fatalf("the graph of a panicked build: %v", err)
	}
	h, err := s.NewGraph("after", nil)
	must(t, err)
	defer h.Close()
	var kept *of.Builder
	must(t, h.Build(func(b *of.Builder) error {
		kept = b
		x, err := b.Input("x", of.Float32, []int64{2})
		if err != nil {
			return err
		}
		defer x.Close()
		return b.AddOutput(x)
	}))
	if _, err := kept.Input("late", of.Float32, nil); !of.IsFailedPrecondition(err) {
		t.Fatalf("a Builder used after Build: %v", err)
	}
}
