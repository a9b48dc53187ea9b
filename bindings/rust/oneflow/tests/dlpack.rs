//! DLPack exchange: an exported tensor imported back shares its memory, for both structs.
use oneflow::{dtype, Session};

#[test]
fn dlpack_round_trip_shares_memory() -> oneflow::Result<()> {
    let s = Session::new()?;
    let x = s.from_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0])?;
    let versioned = x.to_dlpack()?;
    // SAFETY: a managed tensor the library just made, handed back to it.
    let back = unsafe { s.from_dlpack(versioned)? };
    assert!(back.dtype()? == dtype::float32());
    assert_eq!(back.dims()?, vec![2, 2]);
    back.init_constant(9.0)?;
    assert_eq!(x.to_vec::<f32>()?, vec![9.0; 4]);
    drop(back);
    let legacy = x.to_dlpack_legacy()?;
    // SAFETY: as above.
    let back = unsafe { s.from_dlpack_legacy(legacy)? };
    back.init_constant(1.0)?;
    assert_eq!(x.to_vec::<f32>()?, vec![1.0; 4]);
    // Exported views keep their strides.
    let t = x.transpose(0, 1)?;
    let back = unsafe { s.from_dlpack(t.to_dlpack()?)? };
    assert_eq!(back.contiguous()?.to_vec::<f32>()?, t.contiguous()?.to_vec::<f32>()?);
    Ok(())
}
