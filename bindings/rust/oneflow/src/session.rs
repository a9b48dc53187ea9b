//! Sessions (thread pool, random generator, default device), tensor creation and grad mode.
use crate::{
    check, c_string, sys, DType, Element, Graph, GraphOptions, Result, SessionOptions, Tensor, TensorOptions,
};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

/// The C session handle, destroyed with the last Rust value that holds it.
pub(crate) struct SessionHandle(*mut sys::of_session_t);

// SAFETY: the header says "Sessions are thread-safe"; of_session_destroy "must not race with other
// calls that pass this handle", which Drop guarantees: it runs when no other Arc holds the handle.
unsafe impl Send for SessionHandle {}
unsafe impl Sync for SessionHandle {}

impl SessionHandle {
    pub(crate) fn raw(&self) -> *mut sys::of_session_t {
        self.0
    }
}

impl Drop for SessionHandle {
    fn drop(&mut self) {
        unsafe { sys::of_session_destroy(self.0) }
    }
}

/// A session: the thread pool kernels run on, the random generator, the default device. Cloning it
/// shares the one C session; tensors, graphs and optimizers made in it keep it alive.
#[derive(Clone)]
pub struct Session {
    pub(crate) handle: Arc<SessionHandle>,
}

impl Session {
    /// A session with the default options (a thread per hardware thread, seed 0x5eed, the CPU).
    pub fn new() -> Result<Session> {
        Session::with_options(&SessionOptions::default())
    }

    /// A session with `options` (start from `SessionOptions::default()`).
    pub fn with_options(options: &SessionOptions) -> Result<Session> {
        let c = options.to_c();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_session_create(&c, &mut raw) })?;
        Ok(Session { handle: Arc::new(SessionHandle(raw)) })
    }

    /// Restarts the random generator from `seed`: the random tensors that follow repeat.
    pub fn manual_seed(&self, seed: u64) -> Result<()> {
        check(unsafe { sys::of_session_manual_seed(self.handle.raw(), seed) })
    }

    /// The session's named dim symbol `name`, made on first use: the same name gives the same value in
    /// one session. Put it in the dims of a graph input; it prints as its name.
    pub fn dim_symbol(&self, name: &str) -> Result<i64> {
        let c = c_string("dim symbol name", name)?;
        let mut dim = 0;
        check(unsafe { sys::of_session_dim_symbol(self.handle.raw(), c.as_ptr(), &mut dim) })?;
        Ok(dim)
    }

    fn made(&self, status: *mut sys::of_status_t, raw: *mut sys::of_tensor_t) -> Result<Tensor> {
        check(status)?;
        // SAFETY: a creation function succeeded: raw is a new reference.
        Ok(unsafe { Tensor::from_raw(raw, self.handle.clone()) })
    }

    /// A tensor holding a copy of `data` (row-major), of `T`'s dtype and shape `dims`.
    pub fn from_slice<T: Element>(&self, dims: &[i64], data: &[T]) -> Result<Tensor> {
        self.from_slice_with(dims, data, &TensorOptions::default())
    }

    /// As [`Session::from_slice`], with per-call options (the device).
    pub fn from_slice_with<T: Element>(&self, dims: &[i64], data: &[T], options: &TensorOptions) -> Result<Tensor> {
        let c = options.to_c();
        let mut raw = std::ptr::null_mut();
        let status = unsafe {
            sys::of_tensor_from_data(
                self.handle.raw(),
                T::dtype().raw(),
                dims.as_ptr(),
                dims.len(),
                data.as_ptr() as *const _,
                std::mem::size_of_val(data),
                &c,
                &mut raw,
            )
        };
        self.made(status, raw)
    }

    /// A CPU tensor over `data` without a copy: the Vec is handed to the library and freed by it when
    /// the tensor's last reference is released (or at once if this fails).
    pub fn from_vec<T: Element>(&self, dims: &[i64], data: Vec<T>) -> Result<Tensor> {
        self.from_owner(dims, data)
    }

    /// A CPU tensor over the elements of `owner` (a `Vec<T>`, a `Box<[T]>`, or any type that owns its
    /// elements exclusively), without a copy: the library keeps `owner` and drops it, on any thread,
    /// when the tensor's last reference is released (or before returning if this fails). In-place
    /// writes (initialisers, optimizer steps) write into it.
    pub fn from_owner<T: Element, O: AsMut<[T]> + Send + 'static>(&self, dims: &[i64], owner: O) -> Result<Tensor> {
        unsafe extern "C" fn drop_owner<O>(_data: *mut std::ffi::c_void, owner: *mut std::ffi::c_void) {
            // SAFETY: `owner` came from Box::into_raw below, and the library calls this exactly once.
            drop(unsafe { Box::from_raw(owner as *mut O) });
        }
        // Boxed first, so that the elements' address is that of their final place, even for an owner
        // that holds them inline; as_mut is called once.
        let mut boxed = Box::new(owner);
        let elements: &mut [T] = (*boxed).as_mut();
        let (data, nbytes) = (elements.as_mut_ptr(), std::mem::size_of_val(elements));
        let owner = Box::into_raw(boxed);
        let mut raw = std::ptr::null_mut();
        let status = unsafe {
            sys::of_tensor_adopt_data(
                self.handle.raw(),
                T::dtype().raw(),
                dims.as_ptr(),
                dims.len(),
                data as *mut _,
                nbytes,
                Some(drop_owner::<O>),
                owner as *mut _,
                &mut raw,
            )
        };
        self.made(status, raw)
    }

    fn creation(
        &self,
        f: unsafe extern "C" fn(
            *mut sys::of_session_t,
            *const sys::of_dtype_t,
            *const i64,
            usize,
            *const sys::of_tensor_options_t,
            *mut *mut sys::of_tensor_t,
        ) -> *mut sys::of_status_t,
        dtype: &DType,
        dims: &[i64],
    ) -> Result<Tensor> {
        let c = TensorOptions::default().to_c();
        let mut raw = std::ptr::null_mut();
        let status = unsafe { f(self.handle.raw(), dtype.raw(), dims.as_ptr(), dims.len(), &c, &mut raw) };
        self.made(status, raw)
    }

    /// Imports a DLPack 1.x managed tensor as a tensor over its memory, without a copy. The library
    /// takes the struct over: it calls the struct's deleter exactly once, when the tensor's last
    /// reference is released, or before returning an `Err`. A READ_ONLY import is refused by every
    /// in-place writer.
    ///
    /// # Safety
    /// `managed` points to a valid `DLManagedTensorVersioned` whose memory stays valid until its
    /// deleter runs, and whose ownership the caller gives up.
    pub unsafe fn from_dlpack(&self, managed: NonNull<sys::DLManagedTensorVersioned>) -> Result<Tensor> {
        let mut raw = std::ptr::null_mut();
        let status = unsafe { sys::of_tensor_from_dlpack(managed.as_ptr(), &mut raw) };
        self.made(status, raw)
    }

    /// The same for a legacy `DLManagedTensor`.
    ///
    /// # Safety
    /// As for [`Session::from_dlpack`].
    pub unsafe fn from_dlpack_legacy(&self, managed: NonNull<sys::DLManagedTensor>) -> Result<Tensor> {
        let mut raw = std::ptr::null_mut();
        let status = unsafe { sys::of_tensor_from_dlpack_legacy(managed.as_ptr(), &mut raw) };
        self.made(status, raw)
    }

    /// Uninitialised contents (bool tensors come zeroed).
    pub fn empty(&self, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        self.creation(sys::of_tensor_empty, dtype, dims)
    }

    /// Zeros.
    pub fn zeros(&self, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        self.creation(sys::of_tensor_zeros, dtype, dims)
    }

    /// Ones.
    pub fn ones(&self, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        self.creation(sys::of_tensor_ones, dtype, dims)
    }

    /// Uniform in [0, 1) from the session's generator (floating dtypes).
    pub fn rand(&self, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        self.creation(sys::of_tensor_rand, dtype, dims)
    }

    /// Standard normal from the session's generator (floating dtypes).
    pub fn randn(&self, dtype: &DType, dims: &[i64]) -> Result<Tensor> {
        self.creation(sys::of_tensor_randn, dtype, dims)
    }

    /// Every element `value` (which the dtype must represent).
    pub fn full(&self, dtype: &DType, dims: &[i64], value: f64) -> Result<Tensor> {
        let c = TensorOptions::default().to_c();
        let mut raw = std::ptr::null_mut();
        let status =
            unsafe { sys::of_tensor_full(self.handle.raw(), dtype.raw(), dims.as_ptr(), dims.len(), value, &c, &mut raw) };
        self.made(status, raw)
    }

    /// The 1-d tensor start, start + step, ... up to but excluding `end`.
    pub fn arange(&self, start: f64, end: f64, step: f64, dtype: &DType) -> Result<Tensor> {
        let c = TensorOptions::default().to_c();
        let mut raw = std::ptr::null_mut();
        let status = unsafe { sys::of_tensor_arange(self.handle.raw(), start, end, step, dtype.raw(), &c, &mut raw) };
        self.made(status, raw)
    }

    /// An empty lazy graph named `name` ("" for "graph_<id>") with the default options.
    pub fn graph(&self, name: &str) -> Result<Graph> {
        Graph::new(self, name, &GraphOptions::default())
    }

    /// An empty lazy graph with `options`.
    pub fn graph_with_options(&self, name: &str, options: &GraphOptions) -> Result<Graph> {
        Graph::new(self, name, options)
    }
}

/// Switches the calling thread's grad mode on or off; returns the mode before the call.
pub fn set_grad_enabled(enabled: bool) -> Result<bool> {
    let mut previous = 0;
    check(unsafe { sys::of_grad_set_enabled(enabled as sys::of_bool_t, &mut previous) })?;
    Ok(previous != 0)
}

/// The calling thread's grad mode (on by default).
pub fn is_grad_enabled() -> bool {
    let mut enabled = 1;
    check(unsafe { sys::of_grad_is_enabled(&mut enabled) }).expect("of_grad_is_enabled cannot fail");
    enabled != 0
}

/// Sets the calling thread's autocast dtype (`dtype::float16()` or `dtype::bfloat16()`; `None`: off)
/// and returns the previous one. Under autocast conv2d, matmul and linear run in that dtype on float32
/// inputs (float32 accumulation), softmax, the losses and the normalizations in float32; the casts are
/// recorded ops, so float32 parameters get float32 gradients (`of_autocast_set`). Another dtype is
/// INVALID_ARGUMENT and changes nothing.
pub fn set_autocast(dtype: Option<&'static DType>) -> Result<Option<&'static DType>> {
    let mut previous = std::ptr::null();
    let raw = dtype.map_or(std::ptr::null(), |d| d.raw());
    check(unsafe { sys::of_autocast_set(raw, &mut previous) })?;
    optional_dtype(previous)
}

/// The calling thread's autocast dtype, `None` when off (the default).
pub fn autocast_dtype() -> Option<&'static DType> {
    let mut raw = std::ptr::null();
    check(unsafe { sys::of_autocast_get(&mut raw) }).expect("of_autocast_get cannot fail");
    optional_dtype(raw).expect("the library's autocast dtype is known")
}

fn optional_dtype(raw: *const sys::of_dtype_t) -> Result<Option<&'static DType>> {
    if raw.is_null() {
        Ok(None)
    } else {
        DType::from_raw(raw).map(Some)
    }
}

/// Sets the calling thread's autocast dtype (see [`set_autocast`]) until the guard is dropped, which
/// restores the previous one. The guard is not `Send`.
pub fn autocast(dtype: &'static DType) -> Result<AutocastGuard> {
    let previous = set_autocast(Some(dtype))?;
    Ok(AutocastGuard { previous, _not_send: PhantomData })
}

/// See [`autocast`].
pub struct AutocastGuard {
    previous: Option<&'static DType>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        let _ = set_autocast(self.previous);
    }
}

/// Turns grad mode off on this thread until the guard is dropped, which restores the previous mode.
/// The guard is not `Send`: it restores the mode of the thread that made it.
pub fn no_grad() -> NoGradGuard {
    let previous = set_grad_enabled(false).expect("switching grad mode cannot fail");
    NoGradGuard { previous, _not_send: PhantomData }
}

/// See [`no_grad`].
pub struct NoGradGuard {
    previous: bool,
    _not_send: PhantomData<*const ()>,
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        let _ = set_grad_enabled(self.previous);
    }
}
