//! Locations of external tools and the policy for missing prerequisites.
//!
//! Tests that need software outside the Rust toolchain (ZooKeeper, a venv
//! with kazoo, the Debian CLIs) must not silently pass when it is absent in
//! CI, yet should not break `cargo test` on a developer machine that never
//! ran `scripts/install-test-deps.sh`. [`external_prereq`] implements that
//! split, keyed on `TESTKEEPER_REQUIRE_EXTERNAL=1` (set by `make test`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Env var that turns "skip" into "fail" for missing external prerequisites.
pub const REQUIRE_EXTERNAL_VAR: &str = "TESTKEEPER_REQUIRE_EXTERNAL";

/// Debian's ZooKeeper server jar; its manifest Class-Path pulls in the rest.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Debian's wrapper for the Java CLI (`org.apache.zookeeper.ZooKeeperMain`).
pub const ZKCLI_SH: &str = "/usr/share/zookeeper/bin/zkCli.sh";
/// Debian's Apache Curator recipes (libcurator-recipes-java); its manifest pulls in the
/// framework, client, guava and the ZooKeeper client.
pub const CURATOR_RECIPES_JAR: &str = "/usr/share/java/curator-recipes.jar";
/// The C client's CLI from `zookeeper-bin`; Debian does not put it on PATH.
pub const CLI_MT: &str = "/usr/lib/zookeeper/bin/cli_mt";

/// Decides what a test does when an external prerequisite is missing.
///
/// Returns `true` when `present`. Otherwise, with
/// `TESTKEEPER_REQUIRE_EXTERNAL=1` it panics (CI must not go green by
/// skipping); without it, prints `skipping: <name> ...` to stderr and returns
/// `false` so the caller can return early. See also [`require_external!`].
pub fn external_prereq(name: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if require_external() {
        panic!(
            "required external prerequisite missing: {name} \
             ({REQUIRE_EXTERNAL_VAR}=1 is set; run scripts/install-test-deps.sh)"
        );
    }
    eprintln!(
        "skipping: {name} is not available (run scripts/install-test-deps.sh; \
         set {REQUIRE_EXTERNAL_VAR}=1 to make this a failure)"
    );
    false
}

/// Returns early from the calling test when a prerequisite is missing (or
/// panics under `TESTKEEPER_REQUIRE_EXTERNAL=1`), e.g.
/// `require_external!("Debian ZooKeeper", env::zookeeper_installed());`
#[macro_export]
macro_rules! require_external {
    ($name:expr, $present:expr) => {
        if !$crate::env::external_prereq($name, $present) {
            return;
        }
    };
}

fn require_external() -> bool {
    std::env::var(REQUIRE_EXTERNAL_VAR).is_ok_and(|v| v == "1" || v == "true")
}

/// The seed of a randomized test: `TESTKEEPER_SEED` if set, else one from the clock. Printed
/// with `what`, so a failure can be replayed.
pub fn test_seed(what: &str) -> u64 {
    let seed = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("{what}: seed {seed} (replay with TESTKEEPER_SEED={seed})");
    seed
}

/// Root of the Cargo workspace (the parent of this package's directory).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ package has a parent directory").to_path_buf()
}

/// The test virtualenv: `$TESTKEEPER_VENV`, else `<repo>/target/test-venv`.
/// Must match the default in `scripts/install-test-deps.sh`.
pub fn venv_dir() -> PathBuf {
    match std::env::var_os("TESTKEEPER_VENV") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target").join("test-venv"),
    }
}

/// Python interpreter inside the test virtualenv.
pub fn venv_python() -> PathBuf {
    venv_dir().join("bin").join("python")
}

/// True when the venv exists and can import everything the kazoo runner
/// needs. Probed with `find_spec`, which does not execute the packages.
pub fn kazoo_venv_ready() -> bool {
    let python = venv_python();
    if !python.is_file() {
        return false;
    }
    let probe = "import importlib.util as u, sys; \
                 sys.exit(any(u.find_spec(m) is None for m in \
                 ('kazoo', 'pytest', 'pytest_timeout', 'objgraph', 'gevent', 'eventlet')))";
    Command::new(python)
        .args(["-c", probe])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Path to the `testkeeper` binary under test.
///
/// `$TESTKEEPER_BIN` wins. Otherwise it is derived from the running test
/// executable: Cargo puts integration tests in `target/<profile>/deps/` and
/// binaries in `target/<profile>/`, so the binary sits one directory up.
/// Cargo only builds that binary when asked (`cargo build -p testkeeper`,
/// which `make test` does); this function does not check it exists.
pub fn testkeeper_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("TESTKEEPER_BIN") {
        if !bin.is_empty() {
            return PathBuf::from(bin);
        }
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("test exe has a directory").to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    dir.join(format!("testkeeper{}", std::env::consts::EXE_SUFFIX))
}

/// Finds an executable on `PATH`, like `command -v`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| candidate.is_file())
}

/// The `java` launcher used for ZooKeeper (`$JAVA` or `java` on PATH).
pub fn java() -> Option<PathBuf> {
    match std::env::var_os("JAVA") {
        Some(j) if !j.is_empty() => Some(PathBuf::from(j)),
        _ => find_in_path("java"),
    }
}

/// Debian's ZooKeeper server is installed and there is a JVM to run it.
pub fn zookeeper_installed() -> bool {
    Path::new(ZOOKEEPER_JAR).is_file() && java().is_some()
}

/// Curator's recipes and a `javac` to compile the recipe test against them.
pub fn curator_installed() -> bool {
    Path::new(CURATOR_RECIPES_JAR).is_file() && find_in_path("javac").is_some() && java().is_some()
}

/// Debian's `zkCli.sh` is installed (it finds java via /usr/bin/java).
pub fn zkcli_installed() -> bool {
    Path::new(ZKCLI_SH).is_file() && Path::new(ZOOKEEPER_JAR).is_file()
}

/// The C client CLI `cli_mt` is installed.
pub fn cli_mt_installed() -> bool {
    Path::new(CLI_MT).is_file()
}

/// Why a Docker engine cannot be used here, or `None` when a daemon answers `docker info`.
/// CI machines here have no daemon, and that is not something CI can install: tests that need
/// one skip with this reason, also under `TESTKEEPER_REQUIRE_EXTERNAL=1`.
pub fn docker_unavailable() -> Option<String> {
    match Command::new("docker").args(["info", "--format", "{{.ServerVersion}}"]).stdin(Stdio::null()).output() {
        Err(e) => Some(format!("`docker info` could not run: {e}")),
        Ok(o) if !o.status.success() => {
            let err = String::from_utf8_lossy(&o.stderr);
            Some(format!("`docker info` failed: {}", err.lines().last().unwrap_or("no output").trim()))
        }
        Ok(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn present_prereq_is_true() {
        assert!(external_prereq("something present", true));
    }

    #[test]
    fn testkeeper_bin_sits_next_to_deps() {
        if std::env::var_os("TESTKEEPER_BIN").is_some() {
            return; // the override makes the derivation moot
        }
        let bin = testkeeper_bin();
        assert!(bin.ends_with(format!("testkeeper{}", std::env::consts::EXE_SUFFIX)));
        // Unit tests also live in target/<profile>/deps, so `deps` was popped.
        assert_ne!(bin.parent().unwrap().file_name().unwrap(), "deps");
    }

    #[test]
    fn venv_default_is_under_target() {
        if std::env::var_os("TESTKEEPER_VENV").is_some() {
            return;
        }
        assert_eq!(venv_python(), repo_root().join("target/test-venv/bin/python"));
    }
}
