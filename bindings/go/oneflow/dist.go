package oneflow

/*
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"runtime"
)

// ProcessGroup is a process group (of_process_group_t): the ranks 0 .. WorldSize-1 of one job, each a
// process on this machine or another, and the collectives between them (Gloo over TCP, CPU tensors).
// Every rank creates it with the same WorldSize and Rendezvous and its own Rank; then every rank must
// make the same collective calls in the same order, with the same dtypes and shapes. A collective that
// fails (a peer exited: CodeUnavailable; one did not take part within the timeout:
// CodeDeadlineExceeded) breaks the group, not the session, tensors or graphs.
//
// Ownership: Close leaves the group (the other ranks' later collectives fail); it is idempotent, safe
// from any goroutine, and a finalizer is the backstop. A graph made data-parallel with the group
// (Graph.SetDataParallel) keeps it alive natively, so the two close in any order; a graph that traced
// collectives needs the group open when it runs. The library serialises the calls of one group, so a
// ProcessGroup may be used from several goroutines (the collectives' order must still be the same on
// every rank).
type ProcessGroup struct {
	ptr  *C.of_process_group_t
	life life
}

// NewProcessGroup joins the group and returns once every rank has joined; opts nil means the defaults
// (NewProcessGroupOptions(), which lack the required Rendezvous). CodeInvalidArgument for options out
// of range (a rank outside [0, WorldSize)), a rendezvous directory that cannot be written, ranks that
// disagree; CodeDeadlineExceeded naming the ranks that did not join within the timeout.
func NewProcessGroup(opts *ProcessGroupOptions) (*ProcessGroup, error) {
	if opts == nil {
		opts = NewProcessGroupOptions()
	}
	var co C.of_process_group_options_t
	c, free := opts.cOptions(&co)
	defer free()
	var ptr *C.of_process_group_t
	if err := statusError(C.of_process_group_create(c, &ptr)); err != nil {
		return nil, err
	}
	g := &ProcessGroup{ptr: ptr}
	runtime.SetFinalizer(g, (*ProcessGroup).Close)
	return g, nil
}

// Close leaves the group (see ProcessGroup). Idempotent; safe from any goroutine; a call in flight on
// the group finishes first.
func (g *ProcessGroup) Close() error {
	if g != nil && g.life.close() {
		g.free()
	}
	return nil
}

func (g *ProcessGroup) free() {
	runtime.SetFinalizer(g, nil)
	C.of_process_group_destroy(g.ptr)
}

func (g *ProcessGroup) begin(what string) error {
	if g == nil || !g.life.enter() {
		return closedError(what, "process group")
	}
	return nil
}

func (g *ProcessGroup) end() {
	if g.life.exit() {
		g.free()
	}
}

// Rank is this process's rank, in [0, WorldSize).
func (g *ProcessGroup) Rank() (int, error) {
	if err := g.begin("Rank"); err != nil {
		return 0, err
	}
	defer g.end()
	var r C.int32_t
	st := C.of_process_group_rank(g.ptr, &r)
	runtime.KeepAlive(g)
	return int(r), statusError(st)
}

// WorldSize is the number of ranks.
func (g *ProcessGroup) WorldSize() (int, error) {
	if err := g.begin("WorldSize"); err != nil {
		return 0, err
	}
	defer g.end()
	var n C.int32_t
	st := C.of_process_group_world_size(g.ptr, &n)
	runtime.KeepAlive(g)
	return int(n), statusError(st)
}

// Barrier returns once every rank has called it (or fails as the collectives do).
func (g *ProcessGroup) Barrier() error {
	if err := g.begin("Barrier"); err != nil {
		return err
	}
	defer g.end()
	st := C.of_process_group_barrier(g.ptr)
	runtime.KeepAlive(g)
	return statusError(st)
}

type collectiveCall func(s *C.of_session_t, x *C.of_tensor_t, out **C.of_tensor_t) *C.of_status_t

// collective runs a collective on x in x's session (eagerly, or traced into a graph being built).
func (g *ProcessGroup) collective(what string, x *Tensor, f collectiveCall) (*Tensor, error) {
	if err := g.begin(what); err != nil {
		return nil, err
	}
	defer g.end()
	sess, err := x.begin(what)
	if err != nil {
		return nil, err
	}
	defer x.end()
	var out *C.of_tensor_t
	st := f(sess.ptr, x.ptr, &out)
	runtime.KeepAlive(g)
	runtime.KeepAlive(x)
	return sess.tensorResult(st, out)
}

// AllReduce returns x's elements combined over the ranks with op (numeric dtypes; ReduceOpMean needs a
// floating one): a new tensor of x's dtype and shape. Not differentiable.
func (g *ProcessGroup) AllReduce(x *Tensor, op ReduceOp) (*Tensor, error) {
	return g.collective("AllReduce", x, func(s *C.of_session_t, cx *C.of_tensor_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_all_reduce(s, g.ptr, cx, C.of_reduce_op_t(op), out)
	})
}

// Broadcast returns rank root's x on every rank (any dtype; every rank passes the same dtype and shape).
func (g *ProcessGroup) Broadcast(x *Tensor, root int) (*Tensor, error) {
	return g.collective("Broadcast", x, func(s *C.of_session_t, cx *C.of_tensor_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_broadcast(s, g.ptr, cx, C.int32_t(root), out)
	})
}

// AllGather returns every rank's x stacked: shape (WorldSize, x.Dims()...), rank r's x at index r.
func (g *ProcessGroup) AllGather(x *Tensor) (*Tensor, error) {
	return g.collective("AllGather", x, func(s *C.of_session_t, cx *C.of_tensor_t, out **C.of_tensor_t) *C.of_status_t {
		return C.of_all_gather(s, g.ptr, cx, out)
	})
}

// SetDataParallel makes every run of this training graph (built with an optimizer) one data-parallel
// step over group: each rank runs the graph on its own inputs (its share of the global batch); the
// first run broadcasts rank 0's parameters and batch-norm running statistics, and each step averages
// the gradients over the ranks (in buckets of opts.BucketBytes) before the optimizer's updates. opts
// nil means the defaults. The graph keeps the group alive (close them in any order).
// CodeFailedPrecondition once the graph has run, or for a built graph without an optimizer.
func (g *Graph) SetDataParallel(group *ProcessGroup, opts *DataParallelOptions) error {
	if err := g.begin("SetDataParallel"); err != nil {
		return err
	}
	defer g.end()
	if err := group.begin("SetDataParallel"); err != nil {
		return err
	}
	defer group.end()
	var co C.of_data_parallel_options_t
	st := C.of_graph_set_data_parallel(g.ptr, group.ptr, opts.cOptions(&co))
	runtime.KeepAlive(g)
	runtime.KeepAlive(group)
	return statusError(st)
}
