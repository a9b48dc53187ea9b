//! Named tensors in safetensors files (read and written by PyTorch, JAX and Hugging Face).
use crate::{check, c_string, state, sys, Error, Result, Session, Tensor};
use std::ffi::{CStr, CString};
use std::path::Path;

fn c_path(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::invalid_argument(format!("path {path:?} contains a NUL byte")))
}

fn c_names(tensors: &[(&str, &Tensor)]) -> Result<(Vec<CString>, Vec<*const std::os::raw::c_char>)> {
    let owned = tensors.iter().map(|(n, _)| c_string("tensor name", n)).collect::<Result<Vec<_>>>()?;
    let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
    Ok((owned, ptrs))
}

/// Writes the named tensors to `path` (atomically: a failed save leaves an existing file as it was).
pub fn save(path: impl AsRef<Path>, tensors: &[(&str, &Tensor)]) -> Result<()> {
    let path = c_path(path.as_ref())?;
    let (_owned, names) = c_names(tensors)?;
    let raws: Vec<*const sys::of_tensor_t> = tensors.iter().map(|(_, t)| t.raw() as *const _).collect();
    let _s = state::read();
    check(unsafe { sys::of_safetensors_save(path.as_ptr(), names.as_ptr(), raws.as_ptr(), raws.len()) })
}

/// Reads every tensor of the file, in file order, onto the session's default device.
pub fn load(session: &Session, path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    let path = c_path(path.as_ref())?;
    let mut list = std::ptr::null_mut();
    check(unsafe { sys::of_safetensors_load(session.handle.raw(), path.as_ptr(), &mut list) })?;
    let n = unsafe { sys::of_tensor_list_count(list) };
    let result = (0..n)
        .map(|i| {
            let mut name = std::ptr::null();
            check(unsafe { sys::of_tensor_list_name(list, i, &mut name) })?;
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
            let mut raw = std::ptr::null_mut();
            check(unsafe { sys::of_tensor_list_get(list, i, &mut raw) })?;
            Ok((name, unsafe { Tensor::from_raw(raw, session.handle.clone()) }))
        })
        .collect();
    unsafe { sys::of_tensor_list_destroy(list) };
    result
}

/// Copies the file's tensors into the named existing tensors, in place (e.g. a model's parameters).
/// strict: every name must be in the file and every tensor of the file named. A failed call writes
/// nothing.
pub fn load_into(path: impl AsRef<Path>, tensors: &[(&str, &Tensor)], strict: bool) -> Result<()> {
    let path = c_path(path.as_ref())?;
    let (_owned, names) = c_names(tensors)?;
    let raws: Vec<*mut sys::of_tensor_t> = tensors.iter().map(|(_, t)| t.raw()).collect();
    let _s = state::write();
    check(unsafe {
        sys::of_safetensors_load_into(path.as_ptr(), names.as_ptr(), raws.as_ptr(), raws.len(), strict as sys::of_bool_t)
    })
}
