//! Raw declarations of `liboneflow_c`, generated from `oneflow_c.h` by Debian's `bindgen` CLI when this
//! crate is built (see `build.rs`); nothing here is written by hand. C enums come through as integer
//! constants (`OF_STATUS_INVALID_ARGUMENT: u32`, ...) and the typedefs they are passed as
//! (`of_status_code_t = i32`), never as Rust `enum`s: a value the C side returns that this crate does
//! not know must not be undefined behaviour. Use the safe `oneflow` crate instead of these.
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, deref_nullptr, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
