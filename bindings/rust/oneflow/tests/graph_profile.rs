//! GraphOptions::profile: the dump shows each step's time and each op's share.
use oneflow::{dim, dtype, GraphOptions, Session};

#[test]
fn profiled_graph_dump_shows_step_times() -> oneflow::Result<()> {
    let s = Session::new()?;
    assert!(!GraphOptions::default().profile, "off by default");
    for profile in [true, false] {
        let mut g = s.graph_with_options("profiled", &GraphOptions { profile, fuse: false, ..Default::default() })?;
        {
            let mut b = g.build()?;
            let x = b.input("x", dtype::float32(), &[dim::UNKNOWN, 8])?;
            let y = x.matmul(&x.transpose(0, 1)?)?.exp()?;
            b.output(&y)?;
            b.finish()?;
        }
        let x = s.full(dtype::float32(), &[4, 8], 0.1)?;
        for _ in 0..2 {
            let out = g.run(&[&x])?;
            assert_eq!(out[0].dims()?, vec![4, 4]);
        }
        let dump = g.dump()?;
        assert_eq!(dump.contains("profile: 2 runs"), profile, "{dump}");
        assert_eq!(dump.contains("    matmul: 1 step, "), profile, "{dump}");
    }
    Ok(())
}
