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

/// The fixture as a user installs it: `pip install` of clients/python (a copy, so the build
/// leaves nothing in the repository), then pytest on a directory with no conftest.py, so only
/// the package's pytest11 entry point can have loaded the plugin. Offline: wheel and setuptools
/// come from the test venv (`--no-build-isolation`).
#[test]
fn the_pip_installed_package_registers_the_fixture_with_pytest() {
    require_external!("kazoo venv", kazoo_venv_ready());
    let root = repo_root();
    let work = tempfile::tempdir().unwrap();
    let (src, site, tests) = (work.path().join("src"), work.path().join("site"), work.path().join("tests"));
    for dir in [&src, &tests] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for f in ["pyproject.toml", "README.md", "testkeeper_pytest.py"] {
        std::fs::copy(root.join("clients/python").join(f), src.join(f)).unwrap();
    }
    std::fs::copy(root.join("tests/python/test_fixture.py"), tests.join("test_fixture.py")).unwrap();
    let pip = run_bounded(
        Command::new(venv_python())
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .args(["--no-build-isolation", "--target"])
            .arg(&site)
            .arg(&src),
        b"",
        std::time::Duration::from_secs(120),
    )
    .expect("run pip");
    assert!(pip.success(), "pip install ./clients/python failed:\n{}", pip.combined());
    assert!(site.join("testkeeper_pytest.py").exists(), "the module was not installed");
    let out = run_bounded(
        Command::new(venv_python())
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(&tests)
            .env("PYTHONPATH", &site)
            .env("TESTKEEPER_BIN", testkeeper_bin())
            .current_dir(work.path()),
        b"",
        std::time::Duration::from_secs(300),
    )
    .expect("run pytest");
    let text = out.combined();
    assert!(out.success() && text.contains("5 passed"), "pytest with the installed plugin:\n{text}");
}
