//! Round trips and refusals of the scenario text parser.

use super::*;

#[test]
fn text_forms_round_trip() {
    for text in [
        "create ~/a \"one \\\"two\\\"\\n\" flags=2 acl=digest-of:u:p:rw",
        "multi [create ~/m \"\" flags=0; check ~/m v=0; delete ~/m v=-1]",
        "multiRead [get ~/r; children ~ watch]",
        "setWatches zxid=0 data=[\"~/a\", \"~/gone\"] exist=[] child=[\"~/a\"]",
        "createTTL ~/t \"\" flags=5 ttl=60000",
        "setAcl ~/x world:anyone:r v=3",
        "addAuth digest \"user:secret\"",
        "removeRecursive ~/d limit=10",
        "whoAmI",
    ] {
        let parsed = op(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(op(&parsed.to_string()).unwrap(), parsed, "{text} -> {parsed}");
    }
    assert_eq!(op("create ~/a \"x\"").unwrap().to_string(), "create ~/a \"x\" flags=0");
    assert_eq!(op("delete ~/a").unwrap().to_string(), "delete ~/a v=-1");
}

#[test]
fn steps_and_files() {
    let text = "# c\n## one\nabout: A.\nsource: B.\nnodes: 3\nplace: s1@1 s2@2\ns0 create ~/a \"\"\ns1 resume node=2\n\
                s2 connect timeout_ms=4000\n4lw ruok node=1\nraw op=77 body=00ff\nrace lock ~/l sessions=3\n";
    let sc = &scenarios("f.txt", text).unwrap()[0];
    assert_eq!((sc.nodes, sc.node_of(2), sc.steps.len()), (3, 2, 6));
    assert_eq!(sc.steps[1], Step::Resume { session: 1, node: Some(2) });
    assert_eq!(sc.steps[4], Step::Raw { op: 77, body: vec![0, 255] });
    for s in &sc.steps {
        assert_eq!(&step(&s.line()).unwrap(), s, "{}", s.line());
    }
}

#[test]
fn errors_name_the_line() {
    let e = scenarios("f.txt", "## a\nabout: x\nsource: y\ns0 frobnicate ~/a\n").unwrap_err();
    assert_eq!(e.at, Some(("f.txt".to_string(), 4)));
    let e = e.to_string();
    assert!(e.starts_with("f.txt:4:") && e.contains("unknown op"), "{e}");
    let e = scenarios("f.txt", "## a\nabout: x\ns0 get ~/a\n").unwrap_err();
    assert_eq!(e.to_string(), "f.txt: scenario a has no source");
    assert!(op("create ~/a x").unwrap_err().what.contains("quoted"));
    assert!(step("s0 check ~/a").unwrap_err().what.contains("v=N"));
}
