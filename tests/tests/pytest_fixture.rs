//! The pytest fixture of clients/python/testkeeper_pytest.py, run as a user runs it: pytest
//! with kazoo on tests/python/test_fixture.py, once per flavor, against the built binary.

use std::process::Command;

use testkeeper_tests::env::{kazoo_venv_ready, repo_root, testkeeper_bin};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{require_external, venv_python};

#[test]
fn pytest_fixture_drives_the_binary_in_both_flavors() {
    require_external!("kazoo venv", kazoo_venv_ready());
    let root = repo_root();
    for flavor in ["zookeeper", "keeper"] {
        let out = run_bounded(
            Command::new(venv_python())
                .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--testkeeper-flavor", flavor])
                .arg(root.join("tests/python"))
                .env("PYTHONPATH", root.join("clients/python"))
                .env("TESTKEEPER_BIN", testkeeper_bin())
                .current_dir(&root),
            b"",
            std::time::Duration::from_secs(300),
        )
        .expect("run pytest");
        let text = out.combined();
        assert!(out.success(), "{flavor}: pytest failed:\n{text}");
        assert!(text.contains("5 passed"), "{flavor}: {text}");
    }
}
