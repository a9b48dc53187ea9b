//! Generates the op methods and options types (ops.rs) from oneflow_c.h with the bindings' one
//! generator, bindings/gen/gen_ops.py (Python 3, standard library), and gives this crate's tests and
//! examples an rpath to liboneflow_c when oneflow-sys found it in a directory.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let generator = manifest.join("../../gen/gen_ops.py");
    let include = PathBuf::from(env::var("DEP_ONEFLOW_C_INCLUDE").expect("oneflow-sys passes the include dir"));
    let header = include.join("oneflow/oneflow_c.h");
    for f in ["gen_ops.py", "oneflow_header.py", "emit_rust.py"] {
        println!("cargo:rerun-if-changed={}", manifest.join("../../gen").join(f).display());
    }
    println!("cargo:rerun-if-changed={}", header.display());
    let out = env::var("OUT_DIR").unwrap();
    let python = env::var("PYTHON3").unwrap_or_else(|_| "python3".to_string());
    let status = Command::new(&python).arg(&generator).args(["rust"]).arg(&header).arg(&out).status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("oneflow: {} failed ({s}) on {}", generator.display(), header.display()),
        Err(e) => panic!("oneflow: cannot run `{python}` for {} ({e}); set PYTHON3", generator.display()),
    }
    println!("cargo:rustc-env=ONEFLOW_C_HEADER={}", header.display());
    if let Ok(dir) = env::var("DEP_ONEFLOW_C_LIB_DIR") {
        if Path::new(&dir).is_dir() {
            // Only this crate's own tests and examples (doc-tests need LD_LIBRARY_PATH); users of the crate find the library
            // through their loader (an installed liboneflow_c, or LD_LIBRARY_PATH).
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
