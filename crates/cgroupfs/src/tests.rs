//! Reader tests on fixture trees (the Talos T1 and T7 vectors among them).

use std::fs;

use oomwarden_model::{PsiKind, PsiSpan};

use super::*;

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }
    dir
}

const HOT: &str = "some avg10=17.06 avg60=8.04 avg300=2.10 total=12172340\nfull avg10=14.54 avg60=6.97 avg300=1.82 total=10654831\n";

#[test]
fn pressure_values() {
    let t = tree(&[("memory.pressure", HOT)]);
    let fs = CgroupFs::new(t.path());
    let p = fs.memory_pressure("").unwrap();
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg10), Ok(17.06));
    assert_eq!(p.value(PsiKind::Full, PsiSpan::Total), Ok(10654831.0));
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg300), Ok(2.1));
}

#[test]
fn pressure_completeness_errors_are_talos_texts() {
    let only_some = parse::pressure("some avg10=1.00 avg60=1.00 avg300=1.00 total=5\n").unwrap();
    assert_eq!(
        only_some
            .value(PsiKind::Full, PsiSpan::Avg10)
            .unwrap_err()
            .to_string(),
        "cannot find memory pressure type: type: full"
    );
    let no_span = parse::pressure("some avg10=1.00 total=5\nfull avg10=1.00 total=5\n").unwrap();
    assert_eq!(
        no_span
            .value(PsiKind::Some, PsiSpan::Avg60)
            .unwrap_err()
            .to_string(),
        "cannot find memory pressure span: span: avg60"
    );
    let max = parse::pressure("some avg10=max avg60=1 avg300=1 total=1\n").unwrap();
    assert_eq!(
        max.value(PsiKind::Some, PsiSpan::Avg10)
            .unwrap_err()
            .to_string(),
        "PSI is not defined"
    );
}

#[test]
fn malformed_pressure_names_the_file() {
    let t = tree(&[
        ("x/memory.pressure", "garbage\n"),
        ("y/memory.pressure", "some avg10=abc\n"),
    ]);
    let fs = CgroupFs::new(t.path());
    // A line without a space is Talos's "invalid format"; a bad value is an error naming the
    // file. Talos (and the collector) read either as every value 0.
    let err = fs.memory_pressure("x").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("line 1: invalid format: no space in \"garbage\""),
        "{err}"
    );
    let err = fs.memory_pressure("y").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("y/memory.pressure: line 1: avg10: expected a number, found \"abc\""),
        "{err}"
    );
}

/// Talos's `ParseValue` and `ParseNestedKeyedValues`, case by case (`internal/pkg/cgroups/
/// value.go`): what it reads as a value, and what fails the file (every value 0 then).
#[test]
fn pressure_is_read_as_talos_reads_it() {
    let value = |v: &str| {
        parse::pressure(&format!("some avg10={v} avg60=0 avg300=0 total=0\n"))
            .ok()
            .map(|p| p.value(PsiKind::Some, PsiSpan::Avg10))
    };
    for (text, want) in [
        ("2.82", 2.82),
        ("1.", 1.0),
        ("-1", -1.0),
        ("+1", 1.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("-1.5", -1.5),
        ("007", 7.0),
        ("9223372036854775807", 9_223_372_036_854_775_807.0),
        ("-9223372036854775808", -9_223_372_036_854_775_808.0),
        // Go divides by math.Pow10(25): not the nearest double to 1e-25.
        ("0.0000000000000000000000001", 1.0 / 1e25),
    ] {
        assert_eq!(value(text), Some(Ok(want)), "{text}");
    }
    for text in [
        "",
        ".",
        "1.2.3",
        "1e3",
        "--1",
        "+-1",
        "1.-5",
        " ",
        "9223372036854775808",
        "0x1",
        "١",
    ] {
        assert_eq!(value(text), None, "{text:?} is not a value");
    }
    // Lines: one space after the key (more are fields' blanks), `\r\n` ends, the last line
    // without `\n`; a blank line, a field without `=` or a line over 64 KiB fail the file.
    let both = "some avg10=1 avg60=2 avg300=3 total=4\nfull avg10=5 avg60=6 avg300=7 total=8";
    let p = parse::pressure(both).unwrap();
    assert_eq!(p.value(PsiKind::Full, PsiSpan::Total), Ok(8.0));
    let p = parse::pressure(&both.replace('\n', "\r\n")).unwrap();
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Total), Ok(4.0));
    let p = parse::pressure(&both.replace("some ", "some   ")).unwrap();
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg10), Ok(1.0));
    for bad in [
        both.replace('\n', "\n\n"),
        both.replace("total=4", "total"),
        format!("{both}\n\n"),
        format!("x{}\n", " ".repeat(70_000)),
    ] {
        assert!(parse::pressure(&bad).is_err(), "{bad:?}");
    }
    // A tab after the key: the key runs to the first space (`some\tavg10=1`), so the `some`
    // line is missing, which fails the cycle with Talos's message.
    let p = parse::pressure(&both.replace("some ", "some\t")).unwrap();
    assert_eq!(
        p.value(PsiKind::Some, PsiSpan::Avg10),
        Err(PressureError::MissingType("some"))
    );
    // A later line of the same kind replaces the earlier one; an unknown line is ignored.
    let p = parse::pressure(&format!(
        "{both}\nsome avg10=9 avg60=9 avg300=9 total=9\nnew x=1\n"
    ))
    .unwrap();
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg10), Ok(9.0));
}

#[test]
fn single_values_and_limits() {
    // Talos T1: `42`, `max`, newline-terminated.
    let t = tree(&[
        ("a/memory.current", "42\n"),
        ("a/memory.max", "max\n"),
        ("a/memory.peak", "371011584\n"),
        ("b/memory.max", "536870912\n"),
        ("c/memory.current", "42.5\n"),
        ("c/memory.max", "-1\n"),
    ]);
    let fs = CgroupFs::new(t.path());
    assert_eq!(fs.memory_current("a").unwrap(), 42);
    assert_eq!(fs.memory_max("a").unwrap(), Limit::Max);
    assert_eq!(
        fs.memory_max("a").unwrap().bytes(),
        None,
        "max is no limit, never -1 or 0"
    );
    assert_eq!(fs.memory_peak("a").unwrap(), 371011584);
    assert_eq!(fs.memory_max("b").unwrap(), Limit::Bytes(536870912));
    assert!(matches!(
        fs.memory_current("c"),
        Err(ReadError::Parse { .. })
    ));
    assert!(matches!(fs.memory_max("c"), Err(ReadError::Parse { .. })));
}

#[test]
fn missing_file_and_vanished_cgroup_are_not_found() {
    let t = tree(&[("a/memory.current", "1\n")]);
    let fs = CgroupFs::new(t.path());
    assert!(fs.memory_peak("a").unwrap_err().is_not_found());
    assert!(fs.memory_current("gone").unwrap_err().is_not_found());
    assert!(fs.children("gone").unwrap_err().is_not_found());
}

#[test]
fn procs_events_and_keyed_files() {
    // Talos T7.
    let t = tree(&[
        ("kubepods/besteffort/pod123/cgroup.procs", "1\n"),
        ("kubepods/burstable/podABC/cgroup.procs", "132\n142536\n"),
        (
            "kubepods/burstable/podABC/cgroup.events",
            "populated 1\nfrozen 0\n",
        ),
        ("empty/cgroup.events", "populated 0\nfrozen 0\n"),
        ("s/memory.stat", "anon 3000\nfile 6000\n"),
        (
            "s/memory.events",
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n",
        ),
    ]);
    let fs = CgroupFs::new(t.path());
    assert_eq!(fs.cgroup_procs("kubepods/besteffort/pod123").unwrap(), [1]);
    assert_eq!(
        fs.cgroup_procs("kubepods/burstable/podABC").unwrap(),
        [132, 142536]
    );
    assert!(
        fs.cgroup_events("kubepods/burstable/podABC")
            .unwrap()
            .populated
    );
    assert!(!fs.is_populated("empty").unwrap());
    assert!(fs.is_populated("kubepods/burstable/podABC").unwrap());
    // No cgroup.events: fall back to any PID in the subtree.
    assert!(fs.is_populated("kubepods/besteffort/pod123").unwrap());
    assert!(fs.is_populated("kubepods").unwrap());
    assert!(!fs.is_populated("s").unwrap());
    assert!(!fs.is_populated("gone").unwrap());
    assert_eq!(
        fs.memory_stat("s").unwrap(),
        [("anon".to_owned(), 3000), ("file".to_owned(), 6000)]
    );
    assert_eq!(
        fs.memory_events("s")
            .unwrap()
            .iter()
            .find(|(k, _)| k == "oom_kill")
            .map(|(_, v)| *v),
        Some(1)
    );
}

/// Issue 36: read from a PID namespace that is not the host's (a DaemonSet under Talos's
/// workload isolation), `cgroup.procs` lists each process it cannot see as `0`: no PID to
/// reach, so none is listed; the others are kept in order.
#[test]
fn processes_outside_the_readers_pid_namespace_are_left_out() {
    assert_eq!(parse::pids("0\n0\n17\n0\n4\n").unwrap(), vec![17, 4]);
    assert_eq!(parse::pids("0\n0\n").unwrap(), Vec::<u32>::new());
    assert!(parse::pids("0\nx\n").is_err());
}

#[test]
fn children_are_sorted_directories_only() {
    let t = tree(&[
        ("kubepods/podb/x", ""),
        ("kubepods/poda/x", ""),
        ("kubepods/memory.max", "max\n"),
    ]);
    std::os::unix::fs::symlink(
        t.path().join("kubepods/poda"),
        t.path().join("kubepods/podlink"),
    )
    .unwrap();
    let fs = CgroupFs::new(t.path());
    assert_eq!(fs.children("kubepods").unwrap(), ["poda", "podb"]);
    assert_eq!(join("", "a"), "a");
    assert_eq!(join("a", "b"), "a/b");
}

#[test]
fn zoneinfo_low_watermarks() {
    // Linux 6.12 on the benchmark VM (abridged: two zones).
    let text = "Node 0, zone      DMA\n  per-node stats\n      nr_inactive_anon 10\n  pages free     3968\n        boost    0\n        min      32\n        low      40\n        high     48\nNode 0, zone    DMA32\n  pages free     170000\n        min      5000\n        low      6250\n        high     7500\n";
    assert_eq!(parse::zoneinfo_low_pages(text), Ok(6290));
    assert!(parse::zoneinfo_low_pages("Node 0, zone DMA\n").is_err());
    assert!(parse::zoneinfo_low_pages("        low      x\n").is_err());
}

#[test]
fn meminfo_of_a_real_kernel() {
    // Linux 6.12, the head of /proc/meminfo on the benchmark VM.
    let text = "MemTotal:         998096 kB\nMemFree:          702212 kB\nMemAvailable:     782780 kB\nBuffers:            2528 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n";
    let m = parse::meminfo(text).unwrap();
    assert_eq!(m.get("MemTotal"), Some(998_096 * 1024));
    assert_eq!(m.get("MemAvailable"), Some(782_780 * 1024));
    assert_eq!(m.get("HugePages_Total"), Some(0));
    assert_eq!(m.get("SwapTotal"), None);
    for bad in [
        "MemTotal 5 kB\n",
        "MemTotal: x kB\n",
        "MemTotal: 5 MB\n",
        "MemTotal: 5 kB extra\n",
        "MemTotal: 18446744073709551615 kB\n",
    ] {
        assert!(parse::meminfo(bad).is_err(), "{bad:?}");
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsers_are_total(text in "\\PC{0,200}") {
            let _ = parse::pressure(&text);
            let _ = parse::flat_keyed(&text);
            let _ = parse::pids(&text);
            let _ = parse::limit(&text);
            let _ = parse::unsigned(&text);
            let _ = parse::cgroup_events(&text);
            let _ = parse::meminfo(&text);
            let _ = parse::zoneinfo_low_pages(&text);
        }

        #[test]
        fn meminfo_values_round_trip(kb in 0u64..(u64::MAX / 1024), count in any::<u64>()) {
            let m = parse::meminfo(&format!("MemAvailable:   {kb} kB\nHugePages_Total:   {count}\n")).unwrap();
            prop_assert_eq!(m.get("MemAvailable"), Some(kb * 1024));
            prop_assert_eq!(m.get("HugePages_Total"), Some(count));
        }

        #[test]
        fn pressure_round_trips(v in prop::array::uniform8(0u32..100_000), total in any::<u32>()) {
            let line = |k: &str, o: usize| format!("{k} avg10={}.{:02} avg60={}.{:02} avg300={}.{:02} total={}",
                v[o] / 100, v[o] % 100, v[o + 1] / 100, v[o + 1] % 100, v[o + 2] / 100, v[o + 2] % 100, total);
            let p = parse::pressure(&format!("{}\n{}\n", line("some", 0), line("full", 4))).unwrap();
            prop_assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg10).unwrap(), f64::from(v[0]) / 100.0);
            prop_assert_eq!(p.value(PsiKind::Full, PsiSpan::Avg300).unwrap(), f64::from(v[6]) / 100.0);
            prop_assert_eq!(p.value(PsiKind::Full, PsiSpan::Total).unwrap(), f64::from(total));
        }

        #[test]
        fn limits_round_trip(b in any::<u64>()) {
            prop_assert_eq!(parse::limit(&format!("{b}\n")), Ok(Limit::Bytes(b)));
        }
    }
}

#[test]
fn t1_value_forms() {
    // Talos T1: integers, `max`, fixed-point decimals including `0.00`, trailing newlines,
    // flat keyed and nested keyed lines.
    let p = parse::pressure("some avg10=0.00 avg60=42.5 avg300=42 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n").unwrap();
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg10), Ok(0.0));
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg60), Ok(42.5));
    assert_eq!(p.value(PsiKind::Some, PsiSpan::Avg300), Ok(42.0));
    assert_eq!(parse::unsigned("42\n"), Ok(42));
    assert_eq!(parse::limit("max\n"), Ok(Limit::Max));
    assert_eq!(
        parse::flat_keyed("anon 3000\nfile 6000\n").unwrap().len(),
        2
    );
    // Other nested-keyed lines parse (and are ignored by the pressure reader).
    assert!(parse::pressure("anon rss=3125 vms=123\nreal rss=1234 vms=5678\n").is_ok());
    // What Talos's ParseValue refuses (`1.`, `.5`, `-1` it takes: see
    // `pressure_is_read_as_talos_reads_it`).
    for bad in ["some avg10=1e3", "some avg10"] {
        assert!(parse::pressure(bad).is_err(), "{bad}");
    }
}
