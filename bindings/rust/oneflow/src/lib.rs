//! Safe Rust API of oneflow_c, an embeddable deep-learning runtime: tensors with interned dtypes and
//! symbolic shapes, eager ops with autograd, optimizers, lazy graphs, safetensors files, and process
//! groups for data-parallel training.
//!
//! ```
//! use oneflow::{dtype, Session};
//! # fn main() -> oneflow::Result<()> {
//! let s = Session::new()?;
//! let x = s.from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
//! x.set_requires_grad(true)?;
//! let loss = x.mul(&x)?.sum(&[], false)?; // sum of squares
//! loss.backward(None, false)?;
//! assert_eq!(x.grad()?.unwrap().to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 8.0]);
//! assert!(loss.dtype()? == dtype::float32());
//! # Ok(())
//! # }
//! ```
//!
//! # Ownership
//! Every object holds exactly one C reference and releases it in `Drop`: [`Tensor`] (`Clone` adds a
//! reference: both values are the same tensor), [`Session`] (`Clone` shares one C session),
//! [`Graph`], [`Optimizer`], [`ProcessGroup`]. A tensor, graph or optimizer keeps the C session it was
//! made in alive, so values may be dropped in any order; the C session is destroyed with the last of
//! them. A graph made data-parallel keeps its group alive natively ([`Graph::set_data_parallel`]).
//!
//! # Op methods
//! Every op of the header is a method generated from it at build time (`x.add(&y)`, `x.conv2d(&w,
//! None, Some(&opts))`): a method of [`Tensor`] when its first argument is a tensor (the op runs in
//! the receiver's session), of [`Session`] when it is a list of tensors ([`Session::cat`]). Optional C
//! arguments are `Option`s, options structs are Rust structs whose `Default` is the library's. A
//! Rust keyword gets a trailing underscore (`cond.where_(&a, &b)`).
//!
//! # Threads
//! `Session`, `Tensor`, `Graph` and `ProcessGroup` are `Send + Sync`, `Optimizer` is `Send`, as the
//! header's rules allow, with one addition of this crate (Note [Tensor state lock]): calls that write a
//! tensor's data or autograd state in place (backward, set_grad, set_requires_grad, initialisers,
//! optimizer calls, graph runs, batch_norm updating running statistics, load_into) take a process-wide
//! write lock, and every other call that reads tensors (collectives included) takes its read side, so
//! a safe program cannot race a write against a read. Grad mode is per thread ([`no_grad`]); a graph is built on one thread
//! ([`GraphBuilder`] is not `Send`).
#![warn(missing_docs)]

use oneflow_sys as sys;

mod dist;
mod dtype_impl;
mod error;
mod graph;
mod optim;
pub mod safetensors;
mod session;
mod tensor;

pub use dist::ProcessGroup;
pub use dtype_impl::{dtype, DType, Element, BF16, F16};
pub use error::{Error, Result};
pub(crate) use error::check;
pub use graph::{Graph, GraphBuilder, MemoryStats};
pub use optim::Optimizer;
pub use session::{
    autocast, autocast_dtype, is_grad_enabled, no_grad, set_autocast, set_grad_enabled, AutocastGuard, NoGradGuard,
    Session,
};
pub(crate) use session::SessionHandle;
pub use tensor::Tensor;
/// DLPack's managed tensors, by name only (see [`Tensor::to_dlpack`] and [`Session::from_dlpack`]).
pub use oneflow_sys::{DLManagedTensor, DLManagedTensorVersioned};

#[allow(missing_docs, clippy::all)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/ops.rs"));
}
pub use generated::*;

/// Devices: their types (`OF_DEVICE_*`, DLPack's values) and their memory allocators' counters.
pub mod device {
    use crate::{check, sys, Result};

    /// The CPU (`OF_DEVICE_CPU`).
    pub const CPU: i32 = sys::OF_DEVICE_CPU as i32;
    /// CUDA GPUs (`OF_DEVICE_CUDA`).
    pub const CUDA: i32 = sys::OF_DEVICE_CUDA as i32;

    /// The counters of a device's memory allocator (`of_device_memory_stats_t`): bytes and counts
    /// since the process started, every session's tensors on the device included.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct MemoryStats {
        /// Storage of live tensors, as asked (before rounding).
        pub bytes_in_use: u64,
        /// The most `bytes_in_use` has been.
        pub peak_bytes_in_use: u64,
        /// Held from the device: in use, rounding slack and the cache.
        pub bytes_reserved: u64,
        /// The most `bytes_reserved` has been.
        pub peak_bytes_reserved: u64,
        /// Of `bytes_reserved`, what no allocation uses.
        pub bytes_cached: u64,
        /// Successful allocations.
        pub allocations: u64,
        /// Allocations that took new memory from the device.
        pub device_allocations: u64,
        /// Memory given back to the device.
        pub device_frees: u64,
        /// Allocations that failed with RESOURCE_EXHAUSTED.
        pub out_of_memory: u64,
    }

    /// The counters of a device ([`CPU`] or [`CUDA`], and its index); UNAVAILABLE for a device this
    /// build or machine does not have.
    pub fn memory_stats(device_type: i32, index: i32) -> Result<MemoryStats> {
        let mut c: sys::of_device_memory_stats_t = unsafe { std::mem::zeroed() };
        c.struct_size = std::mem::size_of::<sys::of_device_memory_stats_t>();
        check(unsafe { sys::of_device_memory_stats(device_type, index, &mut c) })?;
        Ok(MemoryStats {
            bytes_in_use: c.bytes_in_use,
            peak_bytes_in_use: c.peak_bytes_in_use,
            bytes_reserved: c.bytes_reserved,
            peak_bytes_reserved: c.peak_bytes_reserved,
            bytes_cached: c.bytes_cached,
            allocations: c.allocations,
            device_allocations: c.device_allocations,
            device_frees: c.device_frees,
            out_of_memory: c.out_of_memory,
        })
    }

    /// Gives the device's cached memory that no tensor uses back to the device; tensors are
    /// unaffected.
    pub fn empty_cache(device_type: i32, index: i32) -> Result<()> {
        check(unsafe { sys::of_device_empty_cache(device_type, index) })
    }
}

/// Dimension sizes: concrete sizes are `>= 0`; [`dim::UNKNOWN`] and the session's named symbols
/// ([`Session::dim_symbol`]) are negative.
pub mod dim {
    use crate::{check, sys, Result};

    /// An unknown size (`OF_DIM_UNKNOWN`), printed `?`.
    pub const UNKNOWN: i64 = sys::OF_DIM_UNKNOWN;

    /// True for a concrete size (`>= 0`).
    pub fn is_known(dim: i64) -> bool {
        unsafe { sys::of_dim_is_known(dim) != 0 }
    }

    /// True for a named symbol made by [`Session::dim_symbol`](crate::Session::dim_symbol).
    pub fn is_symbol(dim: i64) -> bool {
        unsafe { sys::of_dim_is_symbol(dim) != 0 }
    }

    /// The name of a named symbol; an error for any other value.
    pub fn symbol_name(dim: i64) -> Result<&'static str> {
        let mut name = std::ptr::null();
        let mut len = 0usize;
        check(unsafe { sys::of_dim_symbol_name(dim, &mut name, &mut len) })?;
        // SAFETY: the name is NUL-terminated UTF-8, `len` bytes, valid for the life of the process.
        let bytes = unsafe { std::slice::from_raw_parts(name as *const u8, len) };
        Ok(std::str::from_utf8(bytes).expect("the library's symbol names are UTF-8"))
    }

    /// One dim as the library prints it: the size, `?`, or the symbol's name.
    pub fn to_string(dim: i64) -> String {
        if is_known(dim) {
            dim.to_string()
        } else if let Ok(name) = symbol_name(dim) {
            name.to_string()
        } else {
            "?".to_string()
        }
    }

    /// A shape as the library prints it: `(2, ?, N)`.
    pub fn format(dims: &[i64]) -> String {
        let parts: Vec<String> = dims.iter().map(|&d| to_string(d)).collect();
        if parts.len() == 1 {
            format!("({},)", parts[0])
        } else {
            format!("({})", parts.join(", "))
        }
    }
}

/// The library's version (`of_version`) and its ABI version; [`version_string`] is "MAJOR.MINOR.PATCH".
pub fn version() -> (i32, i32, i32, i32) {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    unsafe { sys::of_version(&mut major, &mut minor, &mut patch) };
    (major, minor, patch, unsafe { sys::of_abi_version() })
}

/// The library's version as "MAJOR.MINOR.PATCH".
pub fn version_string() -> &'static str {
    // SAFETY: a static NUL-terminated ASCII string.
    unsafe { std::ffi::CStr::from_ptr(sys::of_version_string()) }.to_str().unwrap_or("?")
}

/// True when this build of the library includes the CUDA backend.
pub fn cuda_is_built() -> bool {
    unsafe { sys::of_cuda_is_built() != 0 }
}

/// The names of the engine's registered ops, in name order (backward helpers included).
pub fn op_names() -> Result<Vec<&'static str>> {
    let mut count = 0usize;
    check(unsafe { sys::of_op_count(&mut count) })?;
    (0..count)
        .map(|i| {
            let mut name = std::ptr::null();
            check(unsafe { sys::of_op_name(i, &mut name) })?;
            // SAFETY: a static NUL-terminated string of the registry.
            Ok(unsafe { std::ffi::CStr::from_ptr(name) }.to_str().unwrap_or("?"))
        })
        .collect()
}

// Note [Tensor state lock]
// The header lets several threads read a tensor at once but not write its data or autograd state
// while another thread uses it ("must not be used from two threads at once"). Rust's `Tensor` is
// `Clone` (one C tensor, several values) and `Sync`, so safe code could race a write against a read
// through two clones; a data race in the library would be undefined behaviour. This crate therefore
// takes a process-wide RwLock: the write side for the calls that write tensors in place or change
// autograd state, the read side for every other call that reads tensors. Uncontended it costs an
// atomic operation per call; contended, writers (rare: once per training step) wait for the ops in
// flight. Poisoning is ignored: the lock guards no Rust data.
pub(crate) mod state {
    use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

    static LOCK: RwLock<()> = RwLock::new(());

    pub(crate) fn read() -> RwLockReadGuard<'static, ()> {
        LOCK.read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn write() -> RwLockWriteGuard<'static, ()> {
        LOCK.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// A Rust string as a C string, or INVALID_ARGUMENT naming `what` when it holds a NUL byte.
pub(crate) fn c_string(what: &str, s: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s).map_err(|_| Error::invalid_argument(format!("{what} {s:?} contains a NUL byte")))
}

/// A C string field the library set (NULL: None), as an owned String (lossy for invalid UTF-8).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
pub(crate) unsafe fn from_c_string(p: *const std::os::raw::c_char) -> Option<String> {
    (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// The README's Rust blocks run as doc-tests, so that they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
