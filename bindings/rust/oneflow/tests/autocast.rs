//! Autocast (of_autocast_set): inside the guard linear runs in bfloat16 on float32 operands and
//! softmax in float32; dropping the guard restores the mode; float32 is not an autocast dtype.
use oneflow::{autocast, autocast_dtype, dtype, set_autocast, Session};

#[test]
fn autocast_runs_linear_in_bfloat16_and_softmax_in_float32() -> oneflow::Result<()> {
    let s = Session::new()?;
    let x = s.from_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let w = s.from_slice(&[1, 3], &[1.0f32, 1.0, 1.0])?;
    let b = s.from_slice(&[1], &[0.5f32])?;
    assert!(autocast_dtype().is_none());
    {
        let _guard = autocast(dtype::bfloat16())?;
        assert!(autocast_dtype() == Some(dtype::bfloat16()));
        let y = x.linear(&w, Some(&b))?;
        assert!(y.dtype()? == dtype::bfloat16());
        assert_eq!(y.cast(dtype::float32())?.to_vec::<f32>()?, vec![6.5, 15.5]);
        assert!(y.softmax(0)?.dtype()? == dtype::float32());
        let err = set_autocast(Some(dtype::float32())).expect_err("float32 is refused");
        assert!(err.to_string().contains("float32"), "{err}");
        assert!(autocast_dtype() == Some(dtype::bfloat16()));
    }
    assert!(autocast_dtype().is_none());
    assert!(x.linear(&w, Some(&b))?.dtype()? == dtype::float32());
    Ok(())
}
