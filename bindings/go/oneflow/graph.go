package oneflow

/*
#include <stdlib.h>
#include <oneflow/oneflow_c.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Graph is a lazy graph: traced once by Build, then run many times (Run) from any goroutine (runs of
// one graph are serialised by the library). It holds a reference to its session's C handle. Close is
// idempotent and safe from any goroutine; it releases the graph's variables (its free tensors).
type Graph struct {
	ptr  *C.of_graph_t
	core *sessionCore
	life life
}

// NewGraph creates an empty graph; name "" gives "graph_<id>"; opts nil: the defaults.
func (s *Session) NewGraph(name string, opts *GraphOptions) (*Graph, error) {
	c, err := s.begin("NewGraph")
	if err != nil {
		return nil, err
	}
	defer s.end()
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	var co C.of_graph_options_t
	var g *C.of_graph_t
	st := C.of_graph_create(c.ptr, cname, opts.cOptions(&co), &g)
	runtime.KeepAlive(s)
	if err := statusError(st); err != nil {
		return nil, err
	}
	c.ref()
	graph := &Graph{ptr: g, core: c}
	runtime.SetFinalizer(graph, (*Graph).Close)
	return graph, nil
}

// Close destroys the graph. Idempotent; safe from any goroutine.
func (g *Graph) Close() error {
	if g != nil && g.life.close() {
		g.free()
	}
	return nil
}

func (g *Graph) free() {
	runtime.SetFinalizer(g, nil)
	C.of_graph_destroy(g.ptr)
	g.core.unref()
}

func (g *Graph) begin(what string) error {
	if g == nil || !g.life.enter() {
		return closedError(what, "graph")
	}
	return nil
}

func (g *Graph) end() {
	if g.life.exit() {
		g.free()
	}
}

// Builder declares a graph's inputs, parameters, outputs and optimizer during Graph.Build. Op methods
// called in fn on tensors of the graph's session record nodes and return lazy tensors.
type Builder struct {
	g    *Graph
	mu   sync.Mutex
	open bool
}

// Build traces the graph: it pins the goroutine to its OS thread (the C build is per thread), opens
// the build, runs fn and closes the build. Every op call in fn must stay on this goroutine (a lazy
// build records only calls from its thread). When fn or the closing fails, the graph is closed (an
// open C build cannot be abandoned otherwise) and the error returned.
func (g *Graph) Build(fn func(b *Builder) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.begin("Build"); err != nil {
		return err
	}
	defer g.end() // before the unlock: a graph closed by a failed build is destroyed on this thread
	if err := statusError(C.of_graph_begin_build(g.ptr)); err != nil {
		return err
	}
	b := &Builder{g: g, open: true}
	built := false
	defer func() {
		b.mu.Lock()
		b.open = false
		b.mu.Unlock()
		if !built {
			// fn failed or panicked, or the build could not close: destroying the graph (in g.end,
			// still on the building thread) ends the open C build.
			g.Close()
		}
	}()
	err := fn(b)
	if err == nil {
		err = statusError(C.of_graph_end_build(g.ptr))
	}
	runtime.KeepAlive(g)
	built = err == nil
	return err
}

func (b *Builder) check(what string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return newError(CodeFailedPrecondition, "%s: the graph's Build has returned", what)
	}
	return nil
}

// Input declares the next input: a lazy tensor of dtype and dims (sizes, DimUnknown or the session's
// symbols).
func (b *Builder) Input(name string, dtype *DType, dims []int64) (*Tensor, error) {
	if err := b.check("Input"); err != nil {
		return nil, err
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var out *C.of_tensor_t
	st := C.of_graph_add_input(b.g.ptr, cname, dtype.cptr(), dimsArg(dims), C.size_t(len(dims)), &out)
	runtime.KeepAlive(b.g)
	return b.g.core.tensorResult(st, out)
}

// AddParameter registers an eager floating leaf as the trainable variable name (and marks it
// requires_grad).
func (b *Builder) AddParameter(t *Tensor, name string) error {
	if err := b.check("AddParameter"); err != nil {
		return err
	}
	ct, err := tensorArg("AddParameter", "tensor", t)
	if err != nil {
		return err
	}
	defer t.endArg()
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	st := C.of_graph_add_parameter(b.g.ptr, ct, cname)
	runtime.KeepAlive(b.g)
	runtime.KeepAlive(t)
	return statusError(st)
}

// AddOutput declares a lazy tensor of this graph as the next output.
func (b *Builder) AddOutput(t *Tensor) error {
	if err := b.check("AddOutput"); err != nil {
		return err
	}
	ct, err := tensorArg("AddOutput", "tensor", t)
	if err != nil {
		return err
	}
	defer t.endArg()
	st := C.of_graph_add_output(b.g.ptr, ct)
	runtime.KeepAlive(b.g)
	runtime.KeepAlive(t)
	return statusError(st)
}

// AddOptimizer traces the optimizer's update of every parameter that a traced Backward reached; the
// graph keeps the optimizer's state alive (closing the Optimizer afterwards is fine).
func (b *Builder) AddOptimizer(o *Optimizer) error {
	if err := b.check("AddOptimizer"); err != nil {
		return err
	}
	if _, err := o.begin("AddOptimizer"); err != nil {
		return err
	}
	defer o.end()
	st := C.of_graph_add_optimizer(b.g.ptr, o.ptr)
	runtime.KeepAlive(b.g)
	runtime.KeepAlive(o)
	return statusError(st)
}

// Run runs the built graph on eager inputs (in declared order) and returns its outputs (close them).
func (g *Graph) Run(inputs ...*Tensor) ([]*Tensor, error) {
	if err := g.begin("Run"); err != nil {
		return nil, err
	}
	defer g.end()
	cin, err := tensorsArg("Run", "inputs", inputs)
	if err != nil {
		return nil, err
	}
	defer endTensors(inputs)
	var nout C.size_t
	if err := statusError(C.of_graph_output_count(g.ptr, &nout)); err != nil {
		return nil, err
	}
	cout := make([]*C.of_tensor_t, int(nout))
	st := C.of_graph_run(g.ptr, tensorsPtr(cin), C.size_t(len(cin)), tensorsPtr(cout), nout)
	runtime.KeepAlive(g)
	runtime.KeepAlive(inputs)
	if err := statusError(st); err != nil {
		return nil, err
	}
	outs := make([]*Tensor, len(cout))
	for i, p := range cout {
		outs[i] = newTensor(g.core, p)
	}
	return outs, nil
}

func (g *Graph) count(what string, f func(*C.of_graph_t, *C.size_t) *C.of_status_t) (int, error) {
	if err := g.begin(what); err != nil {
		return 0, err
	}
	defer g.end()
	var n C.size_t
	st := f(g.ptr, &n)
	runtime.KeepAlive(g)
	return int(n), statusError(st)
}

// InputCount, OutputCount and FreeTensorCount count the declared inputs, outputs and the free tensors
// (non-trainable variables the session holds for the graph).
func (g *Graph) InputCount() (int, error) {
	return g.count("InputCount", func(p *C.of_graph_t, n *C.size_t) *C.of_status_t { return C.of_graph_input_count(p, n) })
}
func (g *Graph) OutputCount() (int, error) {
	return g.count("OutputCount", func(p *C.of_graph_t, n *C.size_t) *C.of_status_t { return C.of_graph_output_count(p, n) })
}
func (g *Graph) FreeTensorCount() (int, error) {
	return g.count("FreeTensorCount", func(p *C.of_graph_t, n *C.size_t) *C.of_status_t {
		return C.of_graph_free_tensor_count(p, n)
	})
}

// FreeTensorNames are the names of the graph's free tensors, in the order the build met them.
func (g *Graph) FreeTensorNames() ([]string, error) {
	n, err := g.FreeTensorCount()
	if err != nil {
		return nil, err
	}
	if err := g.begin("FreeTensorNames"); err != nil {
		return nil, err
	}
	defer g.end()
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var p *C.char
		if err := statusError(C.of_graph_free_tensor_name(g.ptr, C.size_t(i), &p)); err != nil {
			return nil, err
		}
		names = append(names, C.GoString(p))
	}
	runtime.KeepAlive(g)
	return names, nil
}

// Dump is the graph as text (inputs, variables, nodes, compiled specializations, memory plans).
func (g *Graph) Dump() (string, error) {
	if err := g.begin("Dump"); err != nil {
		return "", err
	}
	defer g.end()
	var n C.size_t
	if err := statusError(C.of_graph_dump(g.ptr, nil, 0, &n)); err != nil {
		return "", err
	}
	for {
		buf := make([]byte, int(n)+1)
		var got C.size_t
		if err := statusError(C.of_graph_dump(g.ptr, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &got)); err != nil {
			return "", err
		}
		runtime.KeepAlive(g)
		if got <= n { // the text may grow between the calls (a run compiles a specialization)
			return string(buf[:got]), nil
		}
		n = got
	}
}

// GraphMemoryStats is the memory plan of the most recent run's specialization.
type GraphMemoryStats struct {
	PlannedPeakBytes    uint64 // the arena holding every intermediate
	IntermediateBytes   uint64 // the sum of all intermediate buffers
	BufferCount         uint64
	InplaceCount        uint64
	NodeCount           uint64 // steps after the passes
	SpecializationCount uint64 // compiled plans cached now
	CompileCount        uint64
	CachedPlanBytes     uint64
}

// MemoryStats reads of_graph_memory_stats.
func (g *Graph) MemoryStats() (GraphMemoryStats, error) {
	if err := g.begin("MemoryStats"); err != nil {
		return GraphMemoryStats{}, err
	}
	defer g.end()
	var c C.of_graph_memory_stats_t
	c.struct_size = C.size_t(unsafe.Sizeof(c))
	st := C.of_graph_memory_stats(g.ptr, &c)
	runtime.KeepAlive(g)
	if err := statusError(st); err != nil {
		return GraphMemoryStats{}, err
	}
	return GraphMemoryStats{uint64(c.planned_peak_bytes), uint64(c.intermediate_bytes), uint64(c.buffer_count),
		uint64(c.inplace_count), uint64(c.node_count), uint64(c.specialization_count), uint64(c.compile_count),
		uint64(c.cached_plan_bytes)}, nil
}
