//! Generates the raw declarations from oneflow_c.h with the `bindgen` CLI (Debian's bindgen 0.60) and
//! links liboneflow_c.
//!
//! Where they are found, in order:
//! - header: `ONEFLOW_C_INCLUDE_DIR` (a directory holding `oneflow/oneflow_c.h`; CMake sets it), the
//!   source tree this crate sits in (`../../../capi/include`), or `pkg-config --cflags oneflow_c`;
//! - library: `ONEFLOW_C_LIB_DIR` (CMake sets it), or `pkg-config --libs oneflow_c`.
//!
//! The library directory is passed on to dependents as `DEP_ONEFLOW_C_LIB_DIR` (for an rpath).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pkg_config(flag: &str) -> Option<String> {
    let out = Command::new("pkg-config").args([flag, "oneflow_c"]).output().ok()?;
    if out.status.success() {
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        None
    }
}

fn include_dir() -> PathBuf {
    println!("cargo:rerun-if-env-changed=ONEFLOW_C_INCLUDE_DIR");
    if let Ok(dir) = env::var("ONEFLOW_C_INCLUDE_DIR") {
        return PathBuf::from(dir);
    }
    let in_tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../capi/include");
    if in_tree.join("oneflow/oneflow_c.h").exists() {
        return in_tree;
    }
    if let Some(flags) = pkg_config("--cflags") {
        for f in flags.split_whitespace() {
            if let Some(dir) = f.strip_prefix("-I") {
                if Path::new(dir).join("oneflow/oneflow_c.h").exists() {
                    return PathBuf::from(dir);
                }
            }
        }
        for dir in ["/usr/local/include", "/usr/include"] {
            if Path::new(dir).join("oneflow/oneflow_c.h").exists() {
                return PathBuf::from(dir);
            }
        }
    }
    panic!(
        "oneflow-sys: oneflow/oneflow_c.h not found: looked in $ONEFLOW_C_INCLUDE_DIR (unset), {} and the \
         directories of `pkg-config --cflags oneflow_c`; set ONEFLOW_C_INCLUDE_DIR or install oneflow_c",
        in_tree.display()
    );
}

fn link() {
    println!("cargo:rerun-if-env-changed=ONEFLOW_C_LIB_DIR");
    let lib_dir = match env::var("ONEFLOW_C_LIB_DIR") {
        Ok(dir) => Some(dir),
        Err(_) => match pkg_config("--libs") {
            Some(libs) => libs.split_whitespace().find_map(|f| f.strip_prefix("-L").map(str::to_string)),
            None => panic!(
                "oneflow-sys: liboneflow_c not found: $ONEFLOW_C_LIB_DIR is unset and `pkg-config --libs \
                 oneflow_c` failed (is oneflow_c installed, and PKG_CONFIG_PATH set?); set ONEFLOW_C_LIB_DIR \
                 to the directory holding liboneflow_c.so"
            ),
        },
    };
    if let Some(dir) = lib_dir {
        if !Path::new(&dir).join("liboneflow_c.so").exists() {
            panic!("oneflow-sys: ONEFLOW_C_LIB_DIR / pkg-config names {dir}, which holds no liboneflow_c.so");
        }
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:lib_dir={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=oneflow_c");
}

fn main() {
    let include = include_dir();
    let header = include.join("oneflow/oneflow_c.h");
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:include={}", include.display());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("bindings.rs");
    let bindgen = env::var("BINDGEN").unwrap_or_else(|_| "bindgen".to_string());
    println!("cargo:rerun-if-env-changed=BINDGEN");
    // Enums as integer constants (an unknown value from C must not be undefined behaviour in Rust),
    // named without their enum's prefix; only the library's names.
    let result = Command::new(&bindgen)
        .arg(&header)
        .args(["--allowlist-function", "of_.*", "--allowlist-type", "of_.*", "--allowlist-var", "OF_.*"])
        .args(["--default-enum-style", "consts", "--no-prepend-enum-name", "--no-doc-comments", "--size_t-is-usize"])
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(format!("-I{}", include.display()))
        .output();
    match result {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "oneflow-sys: `{bindgen}` failed on {}:\n{}{}",
            header.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "oneflow-sys: cannot run `{bindgen}` ({e}): install Debian's bindgen (scripts/install-deps.sh) or \
             set BINDGEN to its path"
        ),
    }
    link();
}
