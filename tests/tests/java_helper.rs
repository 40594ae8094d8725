//! The Java helper of clients/java (TestKeeperServer and the JUnit 5 TestKeeperExtension),
//! compiled with javac and run by JUnit's console launcher with Apache ZooKeeper's Java client
//! (Debian's), once per flavor, against the built binary.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use testkeeper_tests::env::{java, repo_root, testkeeper_bin, zookeeper_installed};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::require_external;

const JUNIT: &str = "/usr/share/java/junit-platform-console-standalone.jar";
const ZOOKEEPER: &str = "/usr/share/java/zookeeper.jar";

fn java_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        if e.path().is_dir() {
            java_files(&e.path(), out);
        } else if e.path().extension().is_some_and(|x| x == "java") {
            out.push(e.path());
        }
    }
}

#[test]
fn junit5_extension_drives_the_binary_in_both_flavors() {
    let have =
        zookeeper_installed() && Path::new(JUNIT).is_file() && testkeeper_tests::env::find_in_path("javac").is_some();
    require_external!("JUnit 5 (junit5), javac and Debian's ZooKeeper client", have);
    let classes = tempfile::tempdir().unwrap();
    let mut sources = Vec::new();
    java_files(&repo_root().join("clients/java"), &mut sources);
    let cp = format!("{JUNIT}:{ZOOKEEPER}");
    let out = run_bounded(
        Command::new("javac").args(["-implicit:none", "-cp", &cp, "-d"]).arg(classes.path()).args(&sources),
        b"",
        Duration::from_secs(180),
    )
    .expect("run javac");
    assert!(out.success(), "javac failed:\n{}", out.combined());
    for flavor in ["zookeeper", "keeper"] {
        let out = run_bounded(
            Command::new(java().expect("java"))
                .arg(format!("-Dtestkeeper.bin={}", testkeeper_bin().display()))
                .arg(format!("-Dtestkeeper.flavor={flavor}"))
                .args(["-jar", JUNIT, "--disable-banner", "--details=tree", "-cp"])
                .arg(format!("{}:{ZOOKEEPER}", classes.path().display()))
                .args(["--select-class", "io.testkeeper.TestKeeperExtensionTest"]),
            b"",
            Duration::from_secs(180),
        )
        .expect("run junit");
        let text = out.combined();
        assert!(out.success(), "{flavor}: JUnit failed:\n{text}");
        assert!(text.contains("4 tests successful") && text.contains("0 tests failed"), "{flavor}: {text}");
    }
}
