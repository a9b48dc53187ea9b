//! Lazy graphs: traced once from the eager op calls, compiled per concrete input shape, run many times.
use crate::{
    check, c_string, state, sys, DType, DataParallelOptions, GraphOptions, Optimizer, ProcessGroup, Result, Session,
    SessionHandle, Tensor,
};
use std::ffi::CStr;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

/// A lazy graph (OneFlow's nn.Graph). Build it once with [`Graph::build`], then [`Graph::run`] it.
///
/// ```
/// use oneflow::{dim, dtype, Session};
/// # fn main() -> oneflow::Result<()> {
/// let s = Session::new()?;
/// let mut g = s.graph("double")?;
/// let mut b = g.build()?;
/// let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 2])?; // any batch size
/// b.output(&x.mul_scalar(2.0)?)?;
/// b.finish()?;
/// let y = g.run(&[&s.ones(dtype::float32(), &[3, 2])?])?;
/// assert_eq!(y[0].to_vec::<f32>()?, vec![2.0; 6]);
/// # Ok(())
/// # }
/// ```
pub struct Graph {
    raw: NonNull<sys::of_graph_t>,
    session: Arc<SessionHandle>,
}

// SAFETY: the header: "of_graph_run and the queries may be called from any thread (runs of one graph
// are serialised)"; the build functions, which must stay on the building thread, are reachable only
// through a GraphBuilder, which borrows the graph mutably and is not Send. Destroying it (Drop) cannot
// race with other calls: it has the only reference.
unsafe impl Send for Graph {}
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        // Releases the graph's variables, free tensors included; writes the session's store.
        let _s = state::write();
        unsafe { sys::of_graph_destroy(self.raw.as_ptr()) }
    }
}

/// The memory plan of a graph's most recent run (`of_graph_memory_stats_t`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct MemoryStats {
    pub planned_peak_bytes: u64,
    pub intermediate_bytes: u64,
    pub buffer_count: u64,
    pub inplace_count: u64,
    pub node_count: u64,
    pub specialization_count: u64,
    pub compile_count: u64,
    pub cached_plan_bytes: u64,
}

impl Graph {
    pub(crate) fn new(session: &Session, name: &str, options: &GraphOptions) -> Result<Graph> {
        let name = c_string("graph name", name)?;
        let c = options.to_c();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_graph_create(session.handle.raw(), name.as_ptr(), &c, &mut raw) })?;
        Ok(Graph { raw: NonNull::new(raw).expect("non-NULL on success"), session: session.handle.clone() })
    }

    fn raw(&self) -> *mut sys::of_graph_t {
        self.raw.as_ptr()
    }

    /// Opens the graph's one build on this thread: op calls of this session on this thread record
    /// nodes until [`GraphBuilder::finish`].
    pub fn build(&mut self) -> Result<GraphBuilder<'_>> {
        check(unsafe { sys::of_graph_begin_build(self.raw()) })?;
        Ok(GraphBuilder { graph: self, open: true, _not_send: PhantomData })
    }

    /// Makes every run of this training graph (built with an optimizer) one data-parallel step over
    /// `group`: each rank runs it on its own inputs (its share of the global batch); the first run
    /// broadcasts rank 0's parameters and batch-norm running statistics, and each step averages the
    /// gradients over the ranks (in buckets of `options.bucket_bytes`) before the optimizer's updates.
    /// `options` None: the defaults. The graph keeps the group alive (drop them in any order).
    /// FAILED_PRECONDITION once the graph has run, or for a built graph without an optimizer.
    pub fn set_data_parallel(&mut self, group: &ProcessGroup, options: Option<&DataParallelOptions>) -> Result<()> {
        let c = options.map(|o| o.to_c());
        check(unsafe {
            sys::of_graph_set_data_parallel(self.raw(), group.raw(), c.as_ref().map_or(std::ptr::null(), |o| o as *const _))
        })
    }

    /// Runs the built graph on `inputs` (in declaration order); returns the outputs.
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let n_out = self.output_count()?;
        let inputs: Vec<*const sys::of_tensor_t> = inputs.iter().map(|t| t.raw() as *const _).collect();
        let mut outs = vec![std::ptr::null_mut(); n_out];
        {
            // A run writes parameters, optimizer state and running statistics in place.
            let _s = state::write();
            check(unsafe { sys::of_graph_run(self.raw(), inputs.as_ptr(), inputs.len(), outs.as_mut_ptr(), n_out) })?;
        }
        Ok(outs.into_iter().map(|raw| unsafe { Tensor::from_raw(raw, self.session.clone()) }).collect())
    }

    /// The number of declared inputs.
    pub fn input_count(&self) -> Result<usize> {
        let mut n = 0;
        check(unsafe { sys::of_graph_input_count(self.raw(), &mut n) })?;
        Ok(n)
    }

    /// The number of declared outputs.
    pub fn output_count(&self) -> Result<usize> {
        let mut n = 0;
        check(unsafe { sys::of_graph_output_count(self.raw(), &mut n) })?;
        Ok(n)
    }

    /// The names of the graph's free tensors (non-trainable variables the session holds for it).
    pub fn free_tensor_names(&self) -> Result<Vec<String>> {
        let mut n = 0;
        check(unsafe { sys::of_graph_free_tensor_count(self.raw(), &mut n) })?;
        (0..n)
            .map(|i| {
                let mut name = std::ptr::null();
                check(unsafe { sys::of_graph_free_tensor_name(self.raw(), i, &mut name) })?;
                Ok(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
            })
            .collect()
    }

    /// The graph as text: inputs, variables, nodes, outputs, compiled plans.
    pub fn dump(&self) -> Result<String> {
        let mut len = 0usize;
        check(unsafe { sys::of_graph_dump(self.raw(), std::ptr::null_mut(), 0, &mut len) })?;
        let mut buf = vec![0u8; len + 1];
        check(unsafe { sys::of_graph_dump(self.raw(), buf.as_mut_ptr() as *mut _, buf.len(), &mut len) })?;
        buf.truncate(len);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// The memory plan of the most recent run.
    pub fn memory_stats(&self) -> Result<MemoryStats> {
        // SAFETY: all-zero is a valid stats struct; struct_size tells the library how much to fill.
        let mut c: sys::of_graph_memory_stats_t = unsafe { std::mem::zeroed() };
        c.struct_size = std::mem::size_of::<sys::of_graph_memory_stats_t>();
        check(unsafe { sys::of_graph_memory_stats(self.raw(), &mut c) })?;
        Ok(MemoryStats {
            planned_peak_bytes: c.planned_peak_bytes,
            intermediate_bytes: c.intermediate_bytes,
            buffer_count: c.buffer_count,
            inplace_count: c.inplace_count,
            node_count: c.node_count,
            specialization_count: c.specialization_count,
            compile_count: c.compile_count,
            cached_plan_bytes: c.cached_plan_bytes,
        })
    }
}

/// An open build (from [`Graph::build`]), on the thread that opened it (not `Send`). Declare inputs,
/// call ops (and `backward`) on them, declare outputs or an optimizer, then [`finish`](Self::finish).
/// Dropping it unfinished ends the build as finish would (ignoring its error): the graph is then
/// either built or, without outputs, unusable. Lazy tensors are errors to use after the build.
pub struct GraphBuilder<'g> {
    graph: &'g mut Graph,
    open: bool,
    _not_send: PhantomData<*const ()>,
}

impl GraphBuilder<'_> {
    /// Declares the next input: a lazy tensor of `dtype` and `dims` (sizes, [`crate::dim::UNKNOWN`], or
    /// symbols of this session).
    pub fn input(&mut self, name: &str, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        let name = c_string("graph input name", name)?;
        let mut raw = std::ptr::null_mut();
        check(unsafe {
            sys::of_graph_add_input(self.graph.raw(), name.as_ptr(), dtype.raw(), dims.as_ptr(), dims.len(), &mut raw)
        })?;
        Ok(unsafe { Tensor::from_raw(raw, self.graph.session.clone()) })
    }

    /// Registers an eager floating leaf as a trainable variable named `name` (and marks it
    /// requires_grad), before its first use in the build.
    pub fn parameter(&mut self, tensor: &Tensor, name: &str) -> Result<()> {
        let name = c_string("graph parameter name", name)?;
        let _s = state::write();
        check(unsafe { sys::of_graph_add_parameter(self.graph.raw(), tensor.raw(), name.as_ptr()) })
    }

    /// Declares a lazy tensor of this graph as the next output.
    pub fn output(&mut self, tensor: &Tensor) -> Result<()> {
        check(unsafe { sys::of_graph_add_output(self.graph.raw(), tensor.raw()) })
    }

    /// Traces the optimizer's update of every parameter that a traced backward reached; each run
    /// then applies it (with the optimizer's learning rate at that time).
    pub fn optimizer(&mut self, optimizer: &Optimizer) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_graph_add_optimizer(self.graph.raw(), optimizer.raw()) })
    }

    /// Closes the build.
    pub fn finish(mut self) -> Result<()> {
        self.open = false;
        check(unsafe { sys::of_graph_end_build(self.graph.raw()) })
    }
}

impl Drop for GraphBuilder<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = check(unsafe { sys::of_graph_end_build(self.graph.raw()) });
        }
    }
}
