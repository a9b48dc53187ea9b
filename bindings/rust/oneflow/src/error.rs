//! Errors: every failing C status becomes an [`Error`] with its code and whole message.
use crate::{sys, StatusCode};
use std::ffi::CStr;
use std::fmt;

/// A failed call: the status code (an open set: a code this crate does not name is kept as its
/// number) and the library's message, whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: StatusCode,
    message: String,
}

/// `std::result::Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with `code` and `message` (for errors the binding itself detects).
    pub fn new(code: StatusCode, message: impl Into<String>) -> Error {
        Error { code, message: message.into() }
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Error {
        Error::new(StatusCode::INVALID_ARGUMENT, message)
    }

    /// The status code (`StatusCode::INVALID_ARGUMENT`, ...).
    pub fn code(&self) -> StatusCode {
        self.code
    }

    /// The library's message: it names the argument and the problem.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The code's name ("INVALID_ARGUMENT"); "UNRECOGNIZED" for a code the library does not know.
    pub fn code_name(&self) -> &'static str {
        self.code.name()
    }
}

impl StatusCode {
    /// The code's name ("INVALID_ARGUMENT"); "UNRECOGNIZED" for a code the library does not know.
    pub fn name(self) -> &'static str {
        // SAFETY: a static NUL-terminated ASCII string for any value.
        unsafe { CStr::from_ptr(sys::of_status_code_name(self.0)) }.to_str().unwrap_or("UNRECOGNIZED")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// Ok for NULL; otherwise the status as an Error (the status is freed here).
pub(crate) fn check(status: *mut sys::of_status_t) -> Result<()> {
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a status the library returned and the caller owns: read, then destroyed once.
    let (code, message) = unsafe {
        let code = sys::of_status_code(status);
        let message = CStr::from_ptr(sys::of_status_message(status)).to_string_lossy().into_owned();
        sys::of_status_destroy(status);
        (code, message)
    };
    Err(Error { code: StatusCode(code), message })
}
