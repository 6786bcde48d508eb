//! The usage history's cost at 110 pods (issue 38): memory and CPU.
//!
//! - CPU: one reading of a tree of 110 pods, each with two containers and a sandbox (440
//!   cgroups, on tmpfs), through `usage::read_all` into `History::observe`, against the floor:
//!   `read_to_string` of the same files (the reading also opens, reads and resets each
//!   `memory.peak` through a kept descriptor). And the recommendations of every container (what
//!   each reading's metrics export computes). Batches interleaved, median reported.
//! - Memory: the heap a history of 8 days (the default span) holds for those 440 series, fed a
//!   reading every 5 minutes of a usage that wanders (a histogram's cost follows the spread of
//!   the values, not the number of readings; the windows are 8 whatever the rate), counted by
//!   a counting allocator; and the size of its file.
//!
//! Run: `cargo bench -p oomwarden-daemon --bench usage`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::indexing_slicing,
    clippy::too_many_lines,
    missing_docs
)]

use std::time::Instant;

use oomwarden_cgroupfs::{CgroupFs, PeakMarks};
use oomwarden_daemon::usage::read_all;
use oomwarden_model::Identities;
use oomwarden_usage::{History, Params, Peak, Reading};

/// This process's resident memory, bytes (`/proc/self/status` `VmRSS`).
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

const PODS: usize = 110;

fn tree(root: &std::path::Path) -> Vec<String> {
    let mut pods = Vec::new();
    for p in 0..PODS {
        let pod = format!("kubepods/burstable/pod{p:08}-0000-4000-8000-000000000000");
        for child in ["", "/aaaa", "/bbbb", "/pause"] {
            let d = root.join(format!("{pod}{child}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("memory.current"), "104857600\n").unwrap();
            std::fs::write(d.join("memory.peak"), "134217728\n").unwrap();
            std::fs::write(d.join("memory.max"), "max\n").unwrap();
            std::fs::write(d.join("memory.swap.current"), "0\n").unwrap();
            std::fs::write(
                d.join("memory.events"),
                "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
            )
            .unwrap();
            let mut stat = String::from(
                "anon 83886080\nfile 20971520\nkernel 1048576\nshmem 0\ninactive_file 10485760\nactive_file 10485760\n",
            );
            for k in 0..40 {
                stat.push_str(&format!("other_{k} 0\n"));
            }
            std::fs::write(d.join("memory.stat"), stat).unwrap();
        }
        pods.push(pod);
    }
    pods
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let base = std::env::var("TMPDIR")
        .ok()
        .filter(|_| !std::path::Path::new("/dev/shm").is_dir())
        .unwrap_or_else(|| "/dev/shm".into());
    let root = tempfile::tempdir_in(base).unwrap();
    let pods = tree(root.path());
    let fs = CgroupFs::new(root.path());
    let ids = Identities::default();
    let params = Params::default();
    let mut marks = PeakMarks::new(params.max_series);
    let mut history = History::default();
    let files = [
        "memory.current",
        "memory.peak",
        "memory.max",
        "memory.swap.current",
        "memory.events",
        "memory.stat",
    ];
    let (mut reading, mut floor, mut recommend) = (Vec::new(), Vec::new(), Vec::new());
    let mut at = 1_700_000_000;
    for _ in 0..31 {
        // The regular file takes the reset write as the kernel would not: put the value back.
        for p in &pods {
            for child in ["", "/aaaa", "/bbbb", "/pause"] {
                std::fs::write(
                    root.path().join(format!("{p}{child}/memory.peak")),
                    "134217728\n",
                )
                .unwrap();
            }
        }
        let t = Instant::now();
        let readings = read_all(&fs, &pods, &ids, &mut marks, at);
        history.observe(&readings, &params);
        reading.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(readings.len(), PODS * 4);
        let t = Instant::now();
        for p in &pods {
            for child in ["", "/aaaa", "/bbbb", "/pause"] {
                let d = root.path().join(format!("{p}{child}"));
                let _ = std::fs::read_dir(root.path().join(p)).unwrap().count();
                for f in files {
                    std::hint::black_box(std::fs::read_to_string(d.join(f)).unwrap());
                }
            }
        }
        floor.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        let n = oomwarden_usage::usages(&history)
            .iter()
            .filter_map(|u| oomwarden_usage::recommend(u, &params))
            .count();
        recommend.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(n, PODS * 4);
        at += 10;
    }
    let (r, f, c) = (median(reading), median(floor), median(recommend));
    println!(
        "| cgroups | floor (read the files), µs | a reading into the history, µs | ratio | every recommendation, µs |"
    );
    println!("|---:|---:|---:|---:|---:|");
    println!("| {} | {f:.0} | {r:.0} | {:.2} | {c:.0} |", PODS * 4, r / f);

    // Memory: 8 days of readings every 5 minutes, usage wandering ±40 % around 60–600 MiB.
    drop(history);
    let mut h = History::default();
    let mut seed: u64 = 42;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    let start = 1_700_000_000i64;
    let template = read_all(&fs, &pods, &ids, &mut PeakMarks::new(0), start);
    let bases: Vec<f64> = (0..template.len()).map(|_| 60.0 + 540.0 * rnd()).collect();
    let before = rss();
    for step in 0..(8 * 24 * 12) {
        let now = start + step * 300;
        let batch: Vec<Reading> = template
            .iter()
            .zip(&bases)
            .map(|(r, b)| {
                let mib = b * (0.6 + 0.8 * rnd());
                let bytes = (mib * 1_048_576.0) as u64;
                Reading {
                    at: now,
                    current: bytes,
                    peak: Some(Peak::SinceReset(bytes + bytes / 10)),
                    ..r.clone()
                }
            })
            .collect();
        h.observe(&batch, &params);
        drop(batch);
    }
    let held = rss().saturating_sub(before);
    let file = oomwarden_usage::to_json(&h, &params, start).unwrap().len();
    println!();
    println!("| series | histogram buckets | resident memory grown | per series | usage.json |");
    println!("|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {} | {:.0} KiB | {:.0} B | {:.0} KiB |",
        h.len(),
        h.buckets(),
        held as f64 / 1024.0,
        held as f64 / h.len() as f64,
        file as f64 / 1024.0
    );
}
