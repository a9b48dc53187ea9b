//! Tensors: one C reference each.
use crate::{check, dim, state, sys, DType, Element, Error, KaimingOptions, Result, SessionHandle};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// A tensor: eager (with data) or lazy (a value of a graph being built: dtype and dims, no data).
/// Holds one C reference (`Clone` adds one: the clone is the same tensor, not a copy) and its
/// session, in which its op methods run.
pub struct Tensor {
    raw: NonNull<sys::of_tensor_t>,
    pub(crate) session: Arc<SessionHandle>,
}

// SAFETY: the header: "A tensor may be read (queried, copied out) from several threads at once and
// released from any thread"; the writes it forbids to overlap with other uses are serialised by the
// crate's state lock (Note [Tensor state lock] in lib.rs).
unsafe impl Send for Tensor {}
unsafe impl Sync for Tensor {}

impl Clone for Tensor {
    fn clone(&self) -> Tensor {
        unsafe { sys::of_tensor_retain(self.raw.as_ptr()) };
        Tensor { raw: self.raw, session: self.session.clone() }
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        unsafe { sys::of_tensor_release(self.raw.as_ptr()) }
    }
}

impl Tensor {
    /// Takes over a new reference the library returned.
    ///
    /// # Safety
    /// `raw` is a non-NULL tensor reference owned by the caller, which hands it over.
    pub(crate) unsafe fn from_raw(raw: *mut sys::of_tensor_t, session: Arc<SessionHandle>) -> Tensor {
        Tensor { raw: NonNull::new(raw).expect("the library returned a NULL tensor on success"), session }
    }

    pub(crate) fn raw(&self) -> *mut sys::of_tensor_t {
        self.raw.as_ptr()
    }

    /// The dtype (interned: compare with `==`).
    pub fn dtype(&self) -> Result<&'static DType> {
        // No state lock for dtype and dims, which no call changes (and to_vec calls this under it).
        let mut raw = std::ptr::null();
        check(unsafe { sys::of_tensor_dtype(self.raw(), &mut raw) })?;
        DType::from_raw(raw)
    }

    /// The sizes; a lazy tensor's may hold [`dim::UNKNOWN`] and symbols.
    pub fn dims(&self) -> Result<Vec<i64>> {
        let mut ndim = 0usize;
        check(unsafe { sys::of_tensor_ndim(self.raw(), &mut ndim) })?;
        let mut dims = vec![0i64; ndim];
        check(unsafe { sys::of_tensor_dims(self.raw(), dims.as_mut_ptr(), ndim) })?;
        Ok(dims)
    }

    /// The number of dims.
    pub fn ndim(&self) -> Result<usize> {
        let mut ndim = 0usize;
        check(unsafe { sys::of_tensor_ndim(self.raw(), &mut ndim) })?;
        Ok(ndim)
    }

    /// The number of elements (an error for a lazy tensor of unknown sizes).
    pub fn numel(&self) -> Result<i64> {
        let mut n = 0;
        check(unsafe { sys::of_tensor_numel(self.raw(), &mut n) })?;
        Ok(n)
    }

    /// The size of the elements in bytes (an error for a lazy tensor of unknown sizes).
    pub fn nbytes(&self) -> Result<usize> {
        let mut n = 0usize;
        check(unsafe { sys::of_tensor_nbytes(self.raw(), &mut n) })?;
        Ok(n)
    }

    /// True for a lazy tensor (a value of a graph being built).
    pub fn is_lazy(&self) -> Result<bool> {
        let mut lazy = 0;
        check(unsafe { sys::of_tensor_is_lazy(self.raw(), &mut lazy) })?;
        Ok(lazy != 0)
    }

    /// The device: (`OF_DEVICE_*` type, index).
    pub fn device(&self) -> Result<(i32, i32)> {
        let (mut t, mut i) = (0, 0);
        check(unsafe { sys::of_tensor_device(self.raw(), &mut t, &mut i) })?;
        Ok((t, i))
    }

    /// The elements, row-major, as a `Vec<T>`: INVALID_ARGUMENT naming both dtypes unless `T` is the
    /// tensor's element type; FAILED_PRECONDITION for a lazy tensor.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let _s = state::read();
        let dtype = self.dtype()?;
        if dtype != T::dtype() {
            return Err(Error::invalid_argument(format!(
                "to_vec: the tensor is {dtype}, not {} ({})",
                T::dtype(),
                std::any::type_name::<T>()
            )));
        }
        let mut nbytes = 0usize;
        check(unsafe { sys::of_tensor_nbytes(self.raw(), &mut nbytes) })?;
        let n = nbytes / std::mem::size_of::<T>();
        let mut out = Vec::<T>::with_capacity(n);
        check(unsafe { sys::of_tensor_copy_to_host(self.raw(), out.as_mut_ptr() as *mut _, nbytes) })?;
        // SAFETY: the library wrote all n elements, valid values of T (Element's contract).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// The one element of a one-element tensor.
    pub fn item<T: Element>(&self) -> Result<T> {
        let v = self.to_vec::<T>()?;
        if v.len() != 1 {
            return Err(Error::invalid_argument(format!("item: the tensor has {} elements, not 1", v.len())));
        }
        Ok(v[0])
    }

    /// True if gradients flow to or through the tensor.
    pub fn requires_grad(&self) -> Result<bool> {
        let _s = state::read();
        let mut r = 0;
        check(unsafe { sys::of_tensor_requires_grad(self.raw(), &mut r) })?;
        Ok(r != 0)
    }

    /// Marks a floating leaf as needing gradients (or not).
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_tensor_set_requires_grad(self.raw(), requires_grad as sys::of_bool_t) })
    }

    /// True for a leaf of the backward graph.
    pub fn is_leaf(&self) -> Result<bool> {
        let _s = state::read();
        let mut r = 0;
        check(unsafe { sys::of_tensor_is_leaf(self.raw(), &mut r) })?;
        Ok(r != 0)
    }

    /// The accumulated gradient, or None before the first backward reaching this leaf.
    pub fn grad(&self) -> Result<Option<Tensor>> {
        let _s = state::read();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_tensor_grad(self.raw(), &mut raw) })?;
        Ok(if raw.is_null() { None } else { Some(unsafe { Tensor::from_raw(raw, self.session.clone()) }) })
    }

    /// Replaces the gradient (None clears it).
    pub fn set_grad(&self, grad: Option<&Tensor>) -> Result<()> {
        let _s = state::write();
        check(unsafe { sys::of_tensor_set_grad(self.raw(), grad.map_or(std::ptr::null(), |g| g.raw())) })
    }

    /// A new contiguous tensor on the device ([`device::CPU`](crate::device::CPU) or
    /// [`device::CUDA`](crate::device::CUDA), and its index) with this tensor's dtype, dims and
    /// values: a copy even on the same device, without autograd history.
    pub fn copy_to_device(&self, device_type: i32, index: i32) -> Result<Tensor> {
        let _s = state::read();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_tensor_copy_to_device(self.raw(), device_type, index, &mut raw) })?;
        Ok(unsafe { Tensor::from_raw(raw, self.session.clone()) })
    }

    /// A new leaf sharing this tensor's data, outside every backward graph.
    pub fn detach(&self) -> Result<Tensor> {
        let _s = state::read();
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::of_tensor_detach(self.raw(), &mut raw) })?;
        Ok(unsafe { Tensor::from_raw(raw, self.session.clone()) })
    }

    /// Accumulates the gradients of this tensor into the leaves' grads (`grad` None: an implicit 1
    /// for a one-element tensor). Inside a graph build it traces the backward ops.
    pub fn backward(&self, grad: Option<&Tensor>, retain_graph: bool) -> Result<()> {
        let _s = state::write();
        check(unsafe {
            sys::of_tensor_backward(
                self.session.raw(),
                self.raw(),
                grad.map_or(std::ptr::null(), |g| g.raw()),
                retain_graph as sys::of_bool_t,
            )
        })
    }

    fn init(&self, f: impl FnOnce(*mut sys::of_session_t, *mut sys::of_tensor_t) -> *mut sys::of_status_t) -> Result<()> {
        let _s = state::write();
        check(f(self.session.raw(), self.raw()))
    }

    /// Fills the tensor in place, uniform in [a, b).
    pub fn init_uniform(&self, a: f64, b: f64) -> Result<()> {
        self.init(|s, t| unsafe { sys::of_init_uniform(s, t, a, b) })
    }

    /// Fills the tensor in place, normal(mean, std).
    pub fn init_normal(&self, mean: f64, std: f64) -> Result<()> {
        self.init(|s, t| unsafe { sys::of_init_normal(s, t, mean, std) })
    }

    /// Fills the tensor in place with `value`.
    pub fn init_constant(&self, value: f64) -> Result<()> {
        self.init(|s, t| unsafe { sys::of_init_constant(s, t, value) })
    }

    /// Kaiming (He) uniform, in place.
    pub fn init_kaiming_uniform(&self, options: &KaimingOptions) -> Result<()> {
        let c = options.to_c();
        self.init(|s, t| unsafe { sys::of_init_kaiming_uniform(s, t, &c) })
    }

    /// Kaiming (He) normal, in place.
    pub fn init_kaiming_normal(&self, options: &KaimingOptions) -> Result<()> {
        let c = options.to_c();
        self.init(|s, t| unsafe { sys::of_init_kaiming_normal(s, t, &c) })
    }

    /// Xavier (Glorot) uniform with `gain`, in place.
    pub fn init_xavier_uniform(&self, gain: f64) -> Result<()> {
        self.init(|s, t| unsafe { sys::of_init_xavier_uniform(s, t, gain) })
    }

    /// Xavier (Glorot) normal with `gain`, in place.
    pub fn init_xavier_normal(&self, gain: f64) -> Result<()> {
        self.init(|s, t| unsafe { sys::of_init_xavier_normal(s, t, gain) })
    }
}

/// DLPack exchange (oneflow_c.h, "DLPack exchange"): managed tensors as raw pointers, to hand to or
/// take from another library (their fields are DLPack's `dlpack.h`; `oneflow_sys` knows them only
/// by name).
impl Tensor {
    /// Exports the tensor as a DLPack 1.x managed tensor that shares its memory, without a copy, and
    /// keeps it alive until the consumer calls the struct's deleter (exactly once, from any thread).
    /// The pointer is the caller's to hand over; forgetting it leaks the tensor.
    pub fn to_dlpack(&self) -> Result<NonNull<sys::DLManagedTensorVersioned>> {
        let _s = state::read();
        let mut out = std::ptr::null_mut();
        check(unsafe { sys::of_tensor_to_dlpack(self.raw(), &mut out) })?;
        Ok(NonNull::new(out).expect("non-NULL on success"))
    }

    /// The same as a legacy `DLManagedTensor` (NumPy 1.24, PyTorch 1.13); an error for a read-only
    /// tensor, which the legacy struct cannot mark.
    pub fn to_dlpack_legacy(&self) -> Result<NonNull<sys::DLManagedTensor>> {
        let _s = state::read();
        let mut out = std::ptr::null_mut();
        check(unsafe { sys::of_tensor_to_dlpack_legacy(self.raw(), &mut out) })?;
        Ok(NonNull::new(out).expect("non-NULL on success"))
    }
}

impl fmt::Debug for Tensor {
    /// `Tensor(float32, (2, ?))`, and `lazy` for a lazy tensor.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dtype = self.dtype().map(|d| d.name()).unwrap_or("?");
        let dims = self.dims().map(|d| dim::format(&d)).unwrap_or_default();
        let lazy = if self.is_lazy().unwrap_or(false) { ", lazy" } else { "" };
        write!(f, "Tensor({dtype}, {dims}{lazy})")
    }
}

