//! Dtypes: one `DType` value per interned C dtype, so `==` is pointer identity.
use crate::{check, sys, Error, Result, StatusCode};
use std::ffi::CStr;
use std::fmt;
use std::sync::OnceLock;

/// A dtype. The ten dtypes are `&'static DType` values, one per C dtype whichever way it was reached
/// (a function of [`dtype`], [`DType::from_code`], [`DType::from_name`], [`DType::from_dlpack`],
/// [`DType::promote`], a tensor's dtype), so `==` compares addresses, as the C interned pointers.
pub struct DType {
    raw: usize, // *const sys::of_dtype_t, interned for the life of the process
    code: i32,
}

impl PartialEq for DType {
    fn eq(&self, other: &DType) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for DType {}

impl std::hash::Hash for DType {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state)
    }
}

fn table() -> &'static [DType; 10] {
    static TABLE: OnceLock<[DType; 10]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let fns: [unsafe extern "C" fn() -> *const sys::of_dtype_t; 10] = [
            sys::of_dtype_bool,
            sys::of_dtype_int8,
            sys::of_dtype_uint8,
            sys::of_dtype_int16,
            sys::of_dtype_int32,
            sys::of_dtype_int64,
            sys::of_dtype_float16,
            sys::of_dtype_bfloat16,
            sys::of_dtype_float32,
            sys::of_dtype_float64,
        ];
        fns.map(|f| {
            let raw = unsafe { f() };
            DType { raw: raw as usize, code: unsafe { sys::of_dtype_code(raw) } }
        })
    })
}

impl DType {
    /// The DType of a C dtype pointer the library returned (never NULL).
    pub(crate) fn from_raw(raw: *const sys::of_dtype_t) -> Result<&'static DType> {
        let code = unsafe { sys::of_dtype_code(raw) };
        table().iter().find(|d| d.raw == raw as usize).ok_or_else(|| {
            Error::new(StatusCode::UNIMPLEMENTED, format!("dtype code {code} is newer than this crate"))
        })
    }

    pub(crate) fn raw(&self) -> *const sys::of_dtype_t {
        self.raw as *const sys::of_dtype_t
    }

    /// The dtype with the stable code `code` (`OF_DTYPE_*`); NOT_FOUND otherwise (0 included).
    pub fn from_code(code: i32) -> Result<&'static DType> {
        let mut raw = std::ptr::null();
        check(unsafe { sys::of_dtype_from_code(code, &mut raw) })?;
        DType::from_raw(raw)
    }

    /// The dtype called `name` ("float32", or an alias: "float", "double", "half", "int", "long",
    /// "short"); NOT_FOUND otherwise.
    pub fn from_name(name: &str) -> Result<&'static DType> {
        let c = crate::c_string("dtype name", name)?;
        let mut raw = std::ptr::null();
        check(unsafe { sys::of_dtype_from_name(c.as_ptr(), &mut raw) })?;
        DType::from_raw(raw)
    }

    /// The dtype of DLPack's DLDataType {code, bits, lanes}; NOT_FOUND when none matches.
    pub fn from_dlpack(code: u8, bits: u8, lanes: u16) -> Result<&'static DType> {
        let mut raw = std::ptr::null();
        check(unsafe { sys::of_dtype_from_dlpack(code, bits, lanes, &mut raw) })?;
        DType::from_raw(raw)
    }

    /// This dtype's DLPack DLDataType (code, bits, lanes).
    pub fn to_dlpack(&self) -> (u8, u8, u16) {
        let (mut code, mut bits, mut lanes) = (0, 0, 0);
        check(unsafe { sys::of_dtype_to_dlpack(self.raw(), &mut code, &mut bits, &mut lanes) })
            .expect("a dtype always has a DLPack type");
        (code, bits, lanes)
    }

    /// The result dtype of a binary op on `a` and `b` (PyTorch's promotion).
    pub fn promote(a: &DType, b: &DType) -> &'static DType {
        let mut raw = std::ptr::null();
        check(unsafe { sys::of_dtype_promote(a.raw(), b.raw(), &mut raw) }).expect("dtypes always promote");
        DType::from_raw(raw).expect("promotion gives one of the ten dtypes")
    }

    /// The stable code (`OF_DTYPE_*`).
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The name: "float32", ...
    pub fn name(&self) -> &'static str {
        // SAFETY: a static NUL-terminated ASCII string.
        unsafe { CStr::from_ptr(sys::of_dtype_name(self.raw())) }.to_str().unwrap_or("?")
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        unsafe { sys::of_dtype_size(self.raw()) }
    }

    /// float16, bfloat16, float32, float64.
    pub fn is_floating_point(&self) -> bool {
        unsafe { sys::of_dtype_is_floating_point(self.raw()) != 0 }
    }

    /// Holds negative values.
    pub fn is_signed(&self) -> bool {
        unsafe { sys::of_dtype_is_signed(self.raw()) != 0 }
    }

    /// int8..int64 and uint8 (not bool).
    pub fn is_integer(&self) -> bool {
        unsafe { sys::of_dtype_is_integer(self.raw()) != 0 }
    }

    /// Complex (no complex dtype exists yet).
    pub fn is_complex(&self) -> bool {
        unsafe { sys::of_dtype_is_complex(self.raw()) != 0 }
    }
}

impl fmt::Debug for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ten dtypes.
pub mod dtype {
    use super::{table, DType};
    macro_rules! dtypes {
        ($($name:ident = $i:expr),*) => {$(
            #[doc = concat!("The ", stringify!($name), " dtype.")]
            pub fn $name() -> &'static DType { &table()[$i] }
        )*};
    }
    dtypes!(bool = 0, int8 = 1, uint8 = 2, int16 = 3, int32 = 4, int64 = 5, float16 = 6, bfloat16 = 7,
            float32 = 8, float64 = 9);
}

/// A float16 element as its raw IEEE 754 binary16 bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct F16(pub u16);

/// A bfloat16 element as its raw bits (the upper half of a float32).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BF16(pub u16);

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose values are the elements of one dtype, byte for byte (sealed: the ten below).
///
/// # Safety
/// Implemented only here, for types whose layout is that of the dtype's element and for which every
/// element the library stores is a valid value (bool bytes are 0 or 1: Note [Bool bytes] of the
/// engine).
pub unsafe trait Element: sealed::Sealed + Copy + Send + 'static {
    /// The dtype of this element type.
    fn dtype() -> &'static DType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {}
        unsafe impl Element for $t {
            fn dtype() -> &'static DType { dtype::$d() }
        }
    )*};
}
elements!(bool => bool, i8 => int8, u8 => uint8, i16 => int16, i32 => int32, i64 => int64, F16 => float16,
          BF16 => bfloat16, f32 => float32, f64 => float64);
