//! Every function of oneflow_c.h is reached from the safe crate (its hand-written sources or the op
//! methods generated from the header): a function the header gains and the crate does not wrap
//! fails here.
use std::collections::BTreeSet;

/// Functions the safe crate deliberately does not call, with the reason.
const EXCLUDED: &[(&str, &str)] = &[];

fn header_functions() -> BTreeSet<String> {
    let text = std::fs::read_to_string(env!("ONEFLOW_C_HEADER")).expect("the header");
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("OF_API ") {
            let name = rest.split('(').next().unwrap().split_whitespace().last().unwrap();
            names.insert(name.trim_start_matches('*').to_string());
        }
    }
    names
}

fn crate_sources() -> String {
    let mut text = String::new();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    for entry in std::fs::read_dir(src).unwrap() {
        text += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
    }
    text + &std::fs::read_to_string(concat!(env!("OUT_DIR"), "/ops.rs")).unwrap()
}

#[test]
fn every_header_function_is_wrapped() {
    let functions = header_functions();
    assert!(functions.len() > 150, "read only {} functions from the header", functions.len());
    let sources = crate_sources();
    let used = |name: &str| {
        let needle = format!("sys::{name}");
        sources.match_indices(&needle).any(|(i, _)| {
            let next = sources[i + needle.len()..].chars().next().unwrap_or(' ');
            !(next.is_alphanumeric() || next == '_')
        })
    };
    let missing: Vec<&String> =
        functions.iter().filter(|f| !used(f) && !EXCLUDED.iter().any(|(e, _)| e == f)).collect();
    assert!(missing.is_empty(), "not wrapped by the safe crate: {missing:?}");
    for (e, why) in EXCLUDED {
        assert!(functions.contains(*e), "excluded {e} ({why}) is not in the header");
    }
}
