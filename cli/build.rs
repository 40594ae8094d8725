//! Links the `testkeeper` binary as a position-dependent executable on Linux. A PIE is
//! relocated by the dynamic loader at every start: about 23,700 relocations written into
//! `.data.rel.ro` and the GOT, a hundred pages copied on write before `main` runs, 40% of a
//! start's page faults. Linked at a fixed address the linker resolves them once (`perf stat -e
//! page-faults` on a start that only parses its arguments: 255 -> 149). docs/performance.md
//! ("Start time") has the measurement. A test server gives up nothing it needs: the address
//! randomisation of the binary's own image is what a PIE buys.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if linux {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
