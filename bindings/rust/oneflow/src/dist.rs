//! Process groups and data-parallel training: the ranks of one job (processes on this machine or
//! others), the collectives between them (Gloo over TCP, CPU tensors), and graphs that run one
//! data-parallel step per run ([`Graph::set_data_parallel`](crate::Graph::set_data_parallel)).
use crate::{check, state, sys, ProcessGroupOptions, ReduceOp, Result, Tensor};
use std::ptr::NonNull;

/// A process group (`of_process_group_t`): every rank creates it with the same world size and
/// rendezvous and its own rank; then every rank must make the same collective calls in the same
/// order, with the same dtypes and shapes.
///
/// ```
/// use oneflow::{ProcessGroup, ProcessGroupOptions, ReduceOp, Session};
/// # fn main() -> oneflow::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("oneflow-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// // Each rank: its rank, the job's world size, a directory they share (empty, this group's only).
/// let group = ProcessGroup::new(&ProcessGroupOptions {
///     rank: 0,
///     world_size: 1,
///     rendezvous: Some(dir.to_str().unwrap().into()),
///     ..Default::default()
/// })?;
/// let s = Session::new()?;
/// let x = s.from_slice(&[2], &[1.0f32, 2.0])?;
/// let sum = group.all_reduce(&x, ReduceOp::SUM)?; // the elementwise sum over the ranks
/// assert_eq!(sum.to_vec::<f32>()?, vec![1.0, 2.0]);
/// assert_eq!(group.all_gather(&x)?.dims()?, vec![1, 2]); // (world_size, 2)
/// # drop(group);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(())
/// # }
/// ```
///
/// Ownership: the value holds the C handle and destroys it in `Drop` (leaving the group: the other
/// ranks' later collectives with it fail). A graph made data-parallel with it keeps the group alive
/// natively, so the two may be dropped in any order; a graph that traced collectives needs the group
/// alive when it runs (FAILED_PRECONDITION after the drop). A failed collective (a peer exited or did
/// not take part within the timeout) breaks the group, not the session, tensors or graphs.
///
/// Threads: `Send + Sync`; the library serialises the calls of one group. The collectives take the
/// read side of the crate's state lock (Note [Tensor state lock]) while they wait for the peers.
pub struct ProcessGroup {
    raw: NonNull<sys::of_process_group_t>,
}

// SAFETY: the header: "the calls of one group are serialised"; it may be destroyed "in any order with
// everything else", and Drop has the only reference, so it cannot race with a call.
unsafe impl Send for ProcessGroup {}
unsafe impl Sync for ProcessGroup {}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        unsafe { sys::of_process_group_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.rank(), self.world_size()) {
            (Ok(r), Ok(n)) => write!(f, "ProcessGroup(rank {r} of {n})"),
            _ => write!(f, "ProcessGroup(?)"),
        }
    }
}

impl ProcessGroup {
    /// Joins the group; returns once every rank has joined. INVALID_ARGUMENT for options out of
    /// range (a rank outside `[0, world_size)`), a rendezvous directory that cannot be written, ranks
    /// that disagree; DEADLINE_EXCEEDED naming the ranks that did not join within the timeout.
    pub fn new(options: &ProcessGroupOptions) -> Result<ProcessGroup> {
        let mut strings = Vec::new();
        let c = options.to_c(&mut strings)?;
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_process_group_create(&c, &mut raw) })?;
        Ok(ProcessGroup { raw: NonNull::new(raw).expect("non-NULL on success") })
    }

    pub(crate) fn raw(&self) -> *mut sys::of_process_group_t {
        self.raw.as_ptr()
    }

    /// This process's rank, in `[0, world_size)`.
    pub fn rank(&self) -> Result<i32> {
        let mut rank = 0;
        check(unsafe { sys::of_process_group_rank(self.raw(), &mut rank) })?;
        Ok(rank)
    }

    /// The number of ranks.
    pub fn world_size(&self) -> Result<i32> {
        let mut n = 0;
        check(unsafe { sys::of_process_group_world_size(self.raw(), &mut n) })?;
        Ok(n)
    }

    /// Returns once every rank has called it (or fails as the collectives do).
    pub fn barrier(&self) -> Result<()> {
        check(unsafe { sys::of_process_group_barrier(self.raw()) })
    }

    /// `x`'s elements combined over the ranks with `op`: a new tensor of x's dtype and shape (numeric
    /// dtypes; MEAN needs a floating one). Runs in x's session, eagerly or traced into a graph being
    /// built; not differentiable.
    pub fn all_reduce(&self, x: &Tensor, op: ReduceOp) -> Result<Tensor> {
        self.collective(x, |s, out| unsafe { sys::of_all_reduce(s, self.raw(), x.raw(), op.0, out) })
    }

    /// Rank `root`'s `x` on every rank (any dtype; every rank passes a tensor of the same dtype and
    /// shape).
    pub fn broadcast(&self, x: &Tensor, root: i32) -> Result<Tensor> {
        self.collective(x, |s, out| unsafe { sys::of_broadcast(s, self.raw(), x.raw(), root, out) })
    }

    /// Every rank's `x`, stacked: shape `(world_size, *x.dims)`, rank r's x at index r.
    pub fn all_gather(&self, x: &Tensor) -> Result<Tensor> {
        self.collective(x, |s, out| unsafe { sys::of_all_gather(s, self.raw(), x.raw(), out) })
    }

    fn collective(
        &self,
        x: &Tensor,
        call: impl FnOnce(*mut sys::of_session_t, *mut *mut sys::of_tensor_t) -> *mut sys::of_status_t,
    ) -> Result<Tensor> {
        let _state = state::read();
        let mut out = std::ptr::null_mut();
        check(call(x.session.raw(), &mut out))?;
        // SAFETY: a new reference, handed over on success.
        Ok(unsafe { Tensor::from_raw(out, x.session.clone()) })
    }
}
