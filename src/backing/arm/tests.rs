use super::*;
use std::time::Duration;

#[test]
fn parses_every_key() {
    let a = parse_arm("x=thp=always,defrag=defer+madvise,mthp.64K=always,hugetlb.2M=512,process.thp=off,malloc=hugetlb,jvm=hugetlbfs,jvm.pretouch=on,jvm.pagesize=1G,collapse=after:2s,env.FOO=bar").unwrap();
    assert_eq!(a.system.len(), 4);
    assert!(a.process.thp_disable && a.process.collapse_after == Some(Duration::from_secs(2)));
    let env = a.process.environment();
    assert!(env.contains(&("GLIBC_TUNABLES".into(), "glibc.malloc.hugetlb=2".into())));
    assert!(env.contains(&(
        "JAVA_TOOL_OPTIONS".into(),
        "-XX:+UseLargePages -XX:+AlwaysPreTouch -XX:LargePageSizeInBytes=1g".into()
    )));
    assert!(env.contains(&("FOO".into(), "bar".into())));
    assert!(a.needs_root() && a.expects_huge());
    let base = parse_arm("base=").unwrap();
    assert!(!base.needs_root() && !base.expects_huge());
}

#[test]
fn qemu_and_watch_keys() {
    let a = parse_arm("g=qemu.prealloc=on,qemu.backing=hugetlb-1g,watch=qemu-system-x86").unwrap();
    let q = a.process.qemu.unwrap();
    assert_eq!((q.backing, q.prealloc), (QemuBacking::Hugetlb1G, true));
    assert_eq!(a.process.watch.as_deref(), Some("qemu-system-x86"));
    assert!(
        a.expects_huge() && !a.needs_root(),
        "the pool is sized by run, not by the arm"
    );
    let k = parse_arm("k=qemu.backing=4k").unwrap();
    assert!(k.process.thp_disable && !k.expects_huge() && !k.process.qemu.unwrap().prealloc);
    assert!(
        parse_arm("x=qemu.backing=2m")
            .unwrap_err()
            .contains("valid: 4k, thp, hugetlb-2m, hugetlb-1g")
    );
    assert!(
        parse_arm("x=qemu.prealloc=on")
            .unwrap_err()
            .contains("needs qemu.backing")
    );
    assert!(
        parse_arm("x=watch=")
            .unwrap_err()
            .contains("PID or a process name")
    );
}

#[test]
fn errors_list_valid_values() {
    assert!(
        parse_arm("x=thp=sometimes")
            .unwrap_err()
            .contains("valid: always, madvise, never")
    );
    assert!(
        parse_arm("x=swap=on")
            .unwrap_err()
            .contains("valid keys: thp, defrag")
    );
    assert!(parse_arm("noequals").unwrap_err().contains("NAME=SPEC"));
    assert!(parse_arm("x=collapse=2s").unwrap_err().contains("after:"));
    assert!(
        preset("db", false)
            .unwrap_err()
            .contains("thp, thp-profiles, malloc, jvm")
    );
}

#[test]
fn presets_expand() {
    let names: Vec<String> = preset("malloc", false)
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    assert_eq!(names, vec!["off", "thp", "hugetlb"]);
    assert_eq!(
        preset("thp", false).unwrap()[2].system,
        vec![(Knob::ThpEnabled, "always".into())]
    );
    let profiles = preset("thp-profiles", false).unwrap();
    assert_eq!(
        profiles.len(),
        5,
        "no vm.defrag_mode arm on a kernel without it"
    );
    let six = preset("thp-profiles", true).unwrap();
    assert_eq!(six.len(), 6);
    assert!(six[..5].iter().all(|a| {
        a.system
            .contains(&("vm.defrag_mode".parse().unwrap(), "0".into()))
    }));
    assert_eq!(six[5].name, "always+defrag_mode");
    assert!(
        six[5]
            .system
            .contains(&("vm.defrag_mode".parse().unwrap(), "1".into()))
    );
    assert_eq!(profiles[3].name, "always+ptes_none409");
    let mongo = &profiles[4];
    assert_eq!(mongo.name, "always+defer+madvise+ptes_none0");
    assert_eq!(
        mongo.system,
        vec![
            (Knob::ThpEnabled, "always".into()),
            (Knob::ThpDefrag, "defer+madvise".into()),
            ("khugepaged.max_ptes_none".parse().unwrap(), "0".into()),
        ]
    );
}

#[test]
fn a_key_given_twice_is_refused_naming_it() {
    let e = parse_arm("a=malloc=thp,malloc=hugetlb").unwrap_err();
    assert!(e.contains("key malloc is given twice"), "{e}");
    // server.arg is a word each time.
    parse_arm("s=server.arg=-c,server.arg=huge_pages=on").unwrap();
}

#[test]
fn defrag_mode_is_an_arm_key() {
    let a = parse_arm("on=vm.defrag_mode=1").unwrap();
    assert_eq!(a.system, vec![(Knob::DefragMode, "1".to_string())]);
    assert!(a.needs_root());
    assert!(parse_arm("on=vm.defrag_mode=2").is_err());
}

#[test]
fn operator_knobs_are_arm_keys() {
    let a = parse_arm(
            "k=khugepaged.max_ptes_none=0,khugepaged.defrag=0,thp.shrink_underused=0,thp.use_zero_page=1,khugepaged.scan_sleep_millisecs=1000",
        )
        .unwrap();
    let names: Vec<String> = a.system.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(
        names,
        [
            "khugepaged.max_ptes_none",
            "khugepaged.defrag",
            "thp.shrink_underused",
            "thp.use_zero_page",
            "khugepaged.scan_sleep_millisecs"
        ]
    );
    assert!(a.needs_root());
    let e = parse_arm("k=khugepaged.max_ptes_none=all").unwrap_err();
    assert!(e.contains("non-negative integer"), "{e}");
    let e = parse_arm("k=thp.shrink_underused=2").unwrap_err();
    assert!(e.contains("one of 0, 1"), "{e}");
    let e = parse_arm("k=khugepaged.full_scans=1").unwrap_err();
    assert!(e.contains("unknown key"), "{e}");
    let adv = parse_arm("m=process.thp=advised").unwrap();
    assert!(adv.process.thp_advised && !adv.process.thp_disable);
}

proptest::proptest! {
    #[test]
    fn arm_specs_never_panic(s in ".{0,80}", k in "[a-z.]{1,12}", v in "[ -~]{0,12}") {
        let _ = parse_arm(&s);
        let _ = parse_arm(&format!("x={k}={v}"));
        let _ = parse_arm(&format!("x={k}={v},{k}={v}"));
    }
}
