package oneflow_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	of "github.com/oneflow-c/oneflow-go/oneflow"
)

// Process groups, collectives and data-parallel graphs in one process: a group of world size 1 in a
// fresh temporary rendezvous directory (groups of several processes are the library's tests,
// tests/dist/).

// oneRank is a group of world size 1 at a new temporary directory, closed at the end of the test.
func oneRank(t *testing.T) *of.ProcessGroup {
	t.Helper()
	o := of.NewProcessGroupOptions()
	o.Rendezvous = t.TempDir()
	o.TimeoutMs = 10000
	g, err := of.NewProcessGroup(o)
	must(t, err)
	t.Cleanup(func() { g.Close() })
	return g
}

func TestProcessGroupOptionsDefaults(t *testing.T) {
	o := of.NewProcessGroupOptions()
	if o.Rank != 0 || o.WorldSize != 1 || o.TimeoutMs != 30000 || o.Rendezvous != "" || o.Host != "" {
		t.Fatalf("defaults %+v", o)
	}
	d := of.NewDataParallelOptions()
	if d.BucketBytes != 25<<20 || d.SyncBatchNormStats {
		t.Fatalf("defaults %+v", d)
	}
}

func TestProcessGroupOneRankCollectives(t *testing.T) {
	T := keeper(t)
	g := oneRank(t)
	if r, err := g.Rank(); err != nil || r != 0 {
		t.Fatalf("Rank() = %d, %v", r, err)
	}
	if n, err := g.WorldSize(); err != nil || n != 1 {
		t.Fatalf("WorldSize() = %d, %v", n, err)
	}
	must(t, g.Barrier())
	s := newSession(t)
	want := []float64{1.5, -2, 3, 0.25, 8, -1}
	x := f32(t, s, []int64{2, 3}, 1.5, -2, 3, 0.25, 8, -1)
	for _, op := range []of.ReduceOp{of.ReduceOpSum, of.ReduceOpMean, of.ReduceOpMax, of.ReduceOpMin} {
		expectValues(t, T(g.AllReduce(x, op)), of.Float32, []int64{2, 3}, want...)
	}
	ints := T(s.FromInt64([]int64{3}, []int64{7, -8, 9}))
	expectValues(t, T(g.AllReduce(ints, of.ReduceOpSum)), of.Int64, []int64{3}, 7, -8, 9)
	expectValues(t, T(g.Broadcast(x, 0)), of.Float32, []int64{2, 3}, want...)
	expectValues(t, T(g.AllGather(x)), of.Float32, []int64{1, 2, 3}, want...)
}

func TestProcessGroupReduceOpIsOpen(t *testing.T) {
	// A value this package does not name survives as its number; the library refuses it.
	unknown := of.ReduceOp(42)
	if int32(unknown) != 42 || unknown.String() != "ReduceOp(42)" || of.ReduceOpMax.String() != "MAX" {
		t.Fatalf("ReduceOp: %d %v %v", int32(unknown), unknown, of.ReduceOpMax)
	}
	g := oneRank(t)
	s := newSession(t)
	_, err := g.AllReduce(f32(t, s, []int64{2}, 1, 2), unknown)
	expectCode(t, err, of.CodeInvalidArgument, "op", "42")
}

func TestProcessGroupErrors(t *testing.T) {
	dir := t.TempDir()
	// A rank outside [0, WorldSize).
	o := of.NewProcessGroupOptions()
	o.Rank, o.Rendezvous = 1, dir
	_, err := of.NewProcessGroup(o)
	expectCode(t, err, of.CodeInvalidArgument, "rank must be in [0, world_size = 1)", "got 1")
	var e *of.Error
	if !errors.As(err, &e) || e.Code != of.CodeInvalidArgument || e.Message == "" {
		t.Fatalf("errors.As: %#v", err)
	}
	// A rendezvous directory that cannot be written (its parent is a file).
	file := filepath.Join(dir, "a-file")
	must(t, os.WriteFile(file, []byte("x"), 0o644))
	o = of.NewProcessGroupOptions()
	o.Rendezvous = filepath.Join(file, "sub")
	_, err = of.NewProcessGroup(o)
	expectCode(t, err, of.CodeInvalidArgument, o.Rendezvous, "is not a writable directory")
	// No rendezvous ("" passes NULL; nil options are the defaults).
	_, err = of.NewProcessGroup(nil)
	expectCode(t, err, of.CodeInvalidArgument, "rendezvous")
	// Collectives: a root out of range, a bool all_reduce, mean of integers; a closed group.
	g := oneRank(t)
	s := newSession(t)
	x := f32(t, s, []int64{2}, 1, 2)
	_, err = g.Broadcast(x, 1)
	expectCode(t, err, of.CodeInvalidArgument, "root must be a rank in [0, 1)", "got 1")
	flags := keeper(t)(s.FromBool([]int64{2}, []bool{true, false}))
	_, err = g.AllReduce(flags, of.ReduceOpSum)
	expectCode(t, err, of.CodeInvalidArgument, "bool")
	ints := keeper(t)(s.FromInt32([]int64{2}, []int32{1, 2}))
	_, err = g.AllReduce(ints, of.ReduceOpMean)
	expectCode(t, err, of.CodeInvalidArgument, "mean needs a floating x")
	must(t, g.Close())
	must(t, g.Close())
	_, err = g.AllGather(x)
	if !errors.Is(err, of.ErrClosed) {
		t.Fatalf("AllGather after Close: %v, want ErrClosed", err)
	}
	if _, err := g.Rank(); !errors.Is(err, of.ErrClosed) {
		t.Fatalf("Rank after Close: %v", err)
	}
}

// dpTrainer is a linear regression trained by a graph, with its batch.
type dpTrainer struct {
	w     *of.Tensor
	graph *of.Graph
	x, y  *of.Tensor
}

func newDPTrainer(t *testing.T, s *of.Session) *dpTrainer {
	T := keeper(t)
	w := f32(t, s, []int64{1, 3}, 0.1, -0.2, 0.3)
	b := T(s.Zeros(of.Float32, []int64{1}, nil))
	must(t, w.SetRequiresGrad(true))
	must(t, b.SetRequiresGrad(true))
	so := of.NewSGDOptions()
	so.LR, so.Momentum = 0.1, 0.9
	opt, err := s.NewSGD([]*of.Tensor{w, b}, so)
	must(t, err)
	t.Cleanup(func() { opt.Close() })
	g, err := s.NewGraph("dp_train", nil)
	must(t, err)
	t.Cleanup(func() { g.Close() })
	must(t, g.Build(func(bl *of.Builder) error {
		gx := T(bl.Input("x", of.Float32, []int64{of.DimUnknown, 3}))
		gy := T(bl.Input("y", of.Float32, []int64{of.DimUnknown, 1}))
		d := T(T(gx.Linear(w, b)).Sub(gy))
		loss := T(T(d.Mul(d)).Mean(nil, false))
		if err := loss.Backward(nil, false); err != nil {
			return err
		}
		if err := bl.AddOptimizer(opt); err != nil {
			return err
		}
		return bl.AddOutput(loss)
	}))
	return &dpTrainer{w: w, graph: g,
		x: f32(t, s, []int64{4, 3}, 1, 0, 2, -1, 1, 0.5, 0, 2, -1, 3, 1, 1),
		y: f32(t, s, []int64{4, 1}, 1, -0.5, 2, 0)}
}

func (d *dpTrainer) losses(t *testing.T, steps int) []float64 {
	t.Helper()
	var out []float64
	for i := 0; i < steps; i++ {
		res, err := d.graph.Run(d.x, d.y)
		must(t, err)
		v, err := res[0].Item()
		must(t, err)
		res[0].Close()
		out = append(out, v)
	}
	return out
}

func TestProcessGroupDataParallelTraining(t *testing.T) {
	s := newSession(t)
	plain := newDPTrainer(t, s)
	want := plain.losses(t, 4)
	if !(want[3] < want[0]) {
		t.Fatalf("the loss should fall: %v", want)
	}
	g := oneRank(t)
	dp := newDPTrainer(t, s)
	o := of.NewDataParallelOptions()
	o.BucketBytes = 8
	must(t, dp.graph.SetDataParallel(g, o))
	// One rank: averaging over the ranks changes nothing.
	got := dp.losses(t, 4)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("data-parallel losses %v, want %v", got, want)
		}
	}
	expectValues(t, dp.w, of.Float32, []int64{1, 3}, values(t, plain.w)...)
	// Only before the first run, and only for a training graph.
	expectCode(t, dp.graph.SetDataParallel(g, nil), of.CodeFailedPrecondition, "already run")
	inference, err := s.NewGraph("no_optimizer", nil)
	must(t, err)
	defer inference.Close()
	must(t, inference.Build(func(b *of.Builder) error {
		x := keeper(t)(b.Input("x", of.Float32, []int64{2}))
		return b.AddOutput(keeper(t)(x.Relu()))
	}))
	expectCode(t, inference.SetDataParallel(g, nil), of.CodeFailedPrecondition, "no optimizer")
}

func TestProcessGroupAndGraphCloseInAnyOrder(t *testing.T) {
	s := newSession(t)
	// The group first: the data-parallel graph keeps it alive and keeps training.
	g := oneRank(t)
	d := newDPTrainer(t, s)
	must(t, d.graph.SetDataParallel(g, nil))
	must(t, g.Close())
	if l := d.losses(t, 3); !(l[2] < l[0]) {
		t.Fatalf("losses %v", l)
	}
	must(t, d.graph.Close())
	// The graph first.
	g = oneRank(t)
	d = newDPTrainer(t, s)
	must(t, d.graph.SetDataParallel(g, nil))
	d.losses(t, 1)
	must(t, d.graph.Close())
	must(t, g.Barrier())
	must(t, g.Close())
	// A group left to the finalizer while its graph trains on.
	d = newDPTrainer(t, s)
	func() {
		o := of.NewProcessGroupOptions()
		o.Rendezvous = t.TempDir()
		lost, err := of.NewProcessGroup(o)
		must(t, err)
		must(t, d.graph.SetDataParallel(lost, nil))
	}()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	d.losses(t, 2)
	// A graph that traced collectives needs its group when it runs.
	T := keeper(t)
	g = oneRank(t)
	gg, err := s.NewGraph("gather", nil)
	must(t, err)
	defer gg.Close()
	must(t, gg.Build(func(b *of.Builder) error {
		x := T(b.Input("x", of.Float32, []int64{of.DimUnknown, 2}))
		return b.AddOutput(T(g.AllGather(T(g.AllReduce(x, of.ReduceOpSum)))))
	}))
	in := f32(t, s, []int64{1, 2}, 3, 4)
	out, err := gg.Run(in)
	must(t, err)
	expectValues(t, out[0], of.Float32, []int64{1, 1, 2}, 3, 4)
	out[0].Close()
	must(t, g.Close())
	_, err = gg.Run(in)
	expectCode(t, err, of.CodeFailedPrecondition, "destroyed")
	// The same with a group left unclosed: once its finalizer has run, the run fails.
	lostGraph, err := s.NewGraph("gather_lost", nil)
	must(t, err)
	defer lostGraph.Close()
	func() {
		o := of.NewProcessGroupOptions()
		o.Rendezvous = t.TempDir()
		lost, err := of.NewProcessGroup(o)
		must(t, err)
		must(t, lostGraph.Build(func(b *of.Builder) error {
			x := T(b.Input("x", of.Float32, []int64{of.DimUnknown, 2}))
			return b.AddOutput(T(lost.AllGather(x)))
		}))
	}()
	for i := 0; i < 200; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		out, err := lostGraph.Run(in)
		if err != nil {
			expectCode(t, err, of.CodeFailedPrecondition, "destroyed")
			return
		}
		out[0].Close()
	}
	t.Fatal("the finalizer did not release the group left unclosed")
}
