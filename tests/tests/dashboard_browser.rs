//! The dashboard in a real browser: headless Debian `chromium` opens `/dashboard` on a
//! `testkeeper serve --http`, creates a znode through the page's form (a client then reads
//! it), and presses a session's Expire button (that client's session then ends and its
//! ephemeral goes). Skips where chromium is missing; fails there under
//! `TESTKEEPER_REQUIRE_EXTERNAL=1`.
//!
//! It also loads a `testkeeper chaos --json` report through the page's file input and checks
//! the timeline has one bar per op and each checker's verdict.
//!
//! `TESTKEEPER_DASHBOARD_SCREENSHOT=FILE` also saves a PNG of the page at the end (how
//! docs/img/dashboard.png is made); `TESTKEEPER_DASHBOARD_CHAOS=REPORT.json` loads that report
//! instead of a fresh short run.

use std::time::Duration;

use serde_json::json;
use testkeeper_tests::chromium::{chromium_path, Browser};
use testkeeper_tests::{require_external, TestkeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

const HTTP_PREFIX: &str = "testkeeper http listening on ";
const WAIT: Duration = Duration::from_secs(20);

/// The admin address `serve` printed on stderr.
fn admin(server: &TestkeeperProcess) -> String {
    let log = server.log_tail(200);
    let addr = log.lines().find_map(|l| l.strip_prefix(HTTP_PREFIX));
    format!("http://{}", addr.unwrap_or_else(|| panic!("no `{HTTP_PREFIX}<addr>` in the log:\n{log}")).trim())
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f).await.expect("timed out")
}

/// Runs a short `testkeeper chaos` (in-process cluster) and returns its `--json` report's path.
fn chaos_report(dir: &std::path::Path) -> String {
    let path = dir.join("chaos.json");
    let mut cmd = std::process::Command::new(testkeeper_tests::env::testkeeper_bin());
    cmd.args(["chaos", "--workload", "register", "--seed", "1", "--ops", "60", "--duration", "1s", "--json"])
        .arg(&path)
        .env("RUST_LOG", "warn");
    let out = testkeeper_tests::process::run_bounded(&mut cmd, b"", Duration::from_secs(120)).expect("run chaos");
    assert!(path.is_file(), "testkeeper chaos wrote no report:\n{}", out.combined());
    path.display().to_string()
}

/// JS string literal.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_creates_a_node_and_expires_a_session_in_chromium() {
    require_external!("Debian chromium (apt-get install chromium)", chromium_path().is_some());
    let server = TestkeeperProcess::start(&["--http", "127.0.0.1:0", "--flavor", "keeper"]);
    let url = admin(&server);
    let reader = bounded(Client::connect(server.addr(), ConnectOptions::default())).await.expect("connect");
    let victim = bounded(Client::connect(server.addr(), ConnectOptions::default())).await.expect("connect");
    bounded(victim.create("/held", b"", &Acl::open(), create_mode::EPHEMERAL)).await.unwrap();
    bounded(victim.exists("/watched", true)).await.unwrap();
    let victim_id = format!("{:#x}", victim.session_id());

    let mut b = Browser::launch(&chromium_path().unwrap()).expect("launch chromium");
    let page = format!("{url}/dashboard");
    b.open(&page).unwrap_or_else(|e| panic!("{e}\n{}", b.stderr()));
    b.wait_for("document.readyState === 'complete' && !!window.tk", WAIT, "the page to load").unwrap();
    b.wait_for("document.getElementById('live').textContent.startsWith('live')", WAIT, "the first poll").unwrap();

    // Create a node through the page's form, as a user would: type, click.
    let created = b
        .eval(&format!(
            "document.getElementById('new-path').value = {}; document.getElementById('new-data').value = {};
             document.getElementById('create').click(); true",
            js("/made_in_browser"),
            js("hello from chromium")
        ))
        .unwrap();
    assert_eq!(created, json!(true));
    b.wait_for("document.getElementById('tree-msg').textContent === 'created /made_in_browser'", WAIT, "the create")
        .unwrap_or_else(|e| {
            let msg = b.eval("document.getElementById('tree-msg').textContent").unwrap_or_default();
            panic!("{e}: page says {msg}");
        });
    let (data, stat) = bounded(reader.get_data("/made_in_browser", false)).await.expect("the node the page made");
    assert_eq!((data.as_slice(), stat.version), (&b"hello from chromium"[..], 0));
    // The page lists it, and shows its data once opened.
    b.wait_for(
        "[...document.querySelectorAll('#children li')].some(li => li.textContent === 'made_in_browser')",
        WAIT,
        "the new child in the tree",
    )
    .unwrap();
    // Search finds it; clicking the hit opens it and shows its data.
    b.eval(
        "const s = document.getElementById('search'); s.value = 'in_brow'; s.dispatchEvent(new Event('input')); true",
    )
    .unwrap();
    let hit = "document.querySelector('#search-results li[data-p=\"/made_in_browser\"]')";
    b.wait_for(&format!("!!{hit}"), WAIT, "the search hit").unwrap();
    b.eval(&format!("{hit}.click(); true")).unwrap();
    b.wait_for("document.getElementById('data').textContent === 'hello from chromium'", WAIT, "the data view").unwrap();

    // The victim's session is listed with its ephemeral and its watch; press its Expire button.
    let row = format!("document.querySelector('#sessions tr[data-session={}]')", js(&victim_id));
    b.wait_for(
        &format!("!!{row} && {row}.textContent.includes('/held') && {row}.textContent.includes('/watched')"),
        WAIT,
        "the victim's session row with its ephemeral and watch",
    )
    .unwrap();
    b.eval(&format!("{row}.querySelector('button.expire').click(); true")).unwrap();
    b.wait_for(
        &format!("document.getElementById('session-msg').textContent === {}", js(&format!("expired {victim_id}"))),
        WAIT,
        "the page to report the expiry",
    )
    .unwrap();
    // The victim's session is over: its connection closes and its ephemeral is gone.
    let deadline = std::time::Instant::now() + WAIT;
    while !victim.is_closed() {
        assert!(std::time::Instant::now() < deadline, "the expired session's connection stayed open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(bounded(victim.exists("/", false)).await.is_err(), "the expired session still answers");
    assert!(bounded(reader.exists("/held", false)).await.unwrap().is_none(), "the ephemeral outlived its session");
    b.wait_for(&format!("!{row}"), WAIT, "the session row to go").unwrap();

    // A fault rule added through the page is in force for clients.
    b.eval("document.getElementById('fault-rule').value = 'error:code=-101,path=/made_in_browser,op=getData,count=1'; document.getElementById('fault-add').click(); true").unwrap();
    b.wait_for("document.getElementById('fault-msg').textContent.startsWith('rule ')", WAIT, "the rule to be added")
        .unwrap();
    let faulted = bounded(reader.get_data("/made_in_browser", false)).await;
    assert_eq!(faulted.err().and_then(|e| e.code()), Some(-101), "the page's rule fired");

    // A finished chaos run's report, chosen through the page's file input, drawn as a timeline.
    let tmp = tempfile::tempdir().unwrap();
    let report = std::env::var("TESTKEEPER_DASHBOARD_CHAOS").unwrap_or_else(|_| chaos_report(tmp.path()));
    let parsed: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let ops = parsed["history"]["ops"].as_array().unwrap();
    let mut procs: Vec<u64> = ops.iter().map(|o| o["process"].as_u64().unwrap()).collect();
    procs.sort_unstable();
    procs.dedup();
    procs.truncate(40); // the page draws the first 40 processes
    let drawn = ops.iter().filter(|o| procs.contains(&o["process"].as_u64().unwrap())).count();
    let doc = b.call("DOM.getDocument", json!({}), true).unwrap();
    let input =
        b.call("DOM.querySelector", json!({"nodeId": doc["root"]["nodeId"], "selector": "#chaos-file"}), true).unwrap();
    b.call("DOM.setFileInputFiles", json!({"nodeId": input["nodeId"], "files": [report]}), true).unwrap();
    b.wait_for("!!document.querySelector('#chaos-view svg')", WAIT, "the chaos timeline").unwrap();
    let bars = b
        .eval("[...document.querySelectorAll('#chaos-view svg rect > title')].filter(t => t.textContent.startsWith('#')).length")
        .unwrap();
    assert_eq!(bars.as_u64(), Some(drawn as u64), "one bar per op of the report");
    let head = b.eval("document.querySelector('#chaos-view .row').textContent").unwrap();
    let head = head.as_str().unwrap();
    let workload = parsed["workload"].as_str().unwrap();
    assert!(head.contains(workload) && head.contains(&format!("{} ops", ops.len())), "{head}");
    for r in parsed["results"].as_array().unwrap() {
        let verdict = format!("{}: {}", r["checker"].as_str().unwrap(), r["verdict"].as_str().unwrap());
        assert!(head.contains(&verdict), "{verdict} not in {head}");
    }

    if let Ok(path) = std::env::var("TESTKEEPER_DASHBOARD_SCREENSHOT") {
        // Something to look at: a worker session with an ephemeral and a watch, and traffic.
        let worker = bounded(Client::connect(server.addr(), ConnectOptions::default())).await.unwrap();
        bounded(worker.create("/workers", b"", &Acl::open(), create_mode::PERSISTENT)).await.unwrap();
        bounded(worker.create(
            "/workers/w1",
            b"{\"host\":\"10.0.0.7\",\"slots\":4}",
            &Acl::open(),
            create_mode::EPHEMERAL,
        ))
        .await
        .unwrap();
        bounded(worker.get_children("/workers", true)).await.unwrap();
        let load = tokio::spawn(async move {
            let end = std::time::Instant::now() + Duration::from_secs(6);
            let mut i = 0u64;
            while std::time::Instant::now() < end {
                let _ = worker.set_data("/workers/w1", format!("{{\"beat\":{i}}}").as_bytes(), -1).await;
                let _ = worker.get_data("/made_in_browser", false).await;
                i += 1;
            }
            worker
        });
        b.eval("window.tk.openPath('/workers/w1').then(() => true)").unwrap();
        b.eval("document.querySelector('#view button[data-v=json]').click(); true").unwrap();
        tokio::time::sleep(Duration::from_millis(5000)).await;
        std::fs::write(&path, b.screenshot().unwrap()).unwrap();
        eprintln!("dashboard screenshot written to {path}");
        drop(load.await);
    }
}
