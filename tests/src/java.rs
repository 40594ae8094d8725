//! Compiling and running the Java programs under `tests/java/` against Debian's jars.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::env::{java, repo_root};
use crate::process::run_bounded;

/// Debian's ZooKeeper client, with slf4j-nop to keep its logging quiet.
pub const ZOOKEEPER_CP: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar";

/// Compiles `tests/java/<name>` for each of `sources` into `classes` against `classpath`;
/// panics with javac's output if it fails.
pub fn compile(sources: &[&str], classpath: &str, classes: &Path) {
    let files: Vec<_> = sources.iter().map(|f| repo_root().join("tests/java").join(f)).collect();
    std::fs::create_dir_all(classes).expect("create the classes directory");
    // -implicit:none: compile only our files, not sources javac finds on the classpath.
    let out = run_bounded(
        Command::new("javac").args(["-implicit:none", "-cp", classpath, "-d"]).arg(classes).args(&files),
        b"",
        Duration::from_secs(180),
    )
    .expect("run javac");
    assert!(out.success(), "javac failed:\n{}", out.combined());
}

/// `java -cp CLASSES:CLASSPATH MAIN`, not yet started.
pub fn command(classes: &Path, classpath: &str, main: &str) -> Command {
    let mut c = Command::new(java().expect("java"));
    c.args(["-cp", &format!("{}:{classpath}", classes.display()), main]);
    c
}
