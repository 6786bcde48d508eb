//! `rightsize` against what users compute instead, on the same workload (issue 38): the VM
//! scenario s27-rightsize sampled each container every second (`samples-*.csv`: the kernel's
//! own numbers on a real 6.12 kernel) while the daemon kept its history; its
//! `rightsize -o json` is beside them. From the samples, a scrape every 60 s (at each of the
//! 60 possible phases) gives what metrics-server, a VPA recommender with its documented
//! defaults, and the seed's `max_over_time`/`quantile_over_time(0.95, …[7d:5m])` would see.
//!
//! `cargo test -p oomwarden-usage --test compare -- --nocapture` prints the table of
//! docs/forensics.md ("rightsize against VPA and PromQL").

// Test code reading its fixtures: a missing or malformed file is a test failure.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    clippy::cast_precision_loss
)]

use std::path::PathBuf;

use oomwarden_usage::compare::{
    VpaOptions, max_over_time, quantile_over_time, scrape, subquery, vpa,
};

const MIB: f64 = 1_048_576.0;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/rightsize")
}

/// `(t, working set, memory.peak since creation)` a second.
fn samples(name: &str) -> Vec<(i64, u64, u64)> {
    let text = std::fs::read_to_string(dir().join(format!("samples-{name}.csv"))).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<u64> = l
                .split(',')
                .map(|x| x.trim().parse().ok())
                .collect::<Option<_>>()?;
            let [t, current, inactive, _file, _shmem, peak] = f[..] else {
                return None;
            };
            Some((
                i64::try_from(t).unwrap(),
                current.saturating_sub(inactive),
                peak,
            ))
        })
        .collect()
}

/// The container's numbers in the scenario's `rightsize -o json`.
fn rightsize(pod: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir().join("rightsize.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == format!("{pod}-7d9f8"))
        .unwrap()["containers"][0]
        .clone()
}

struct Figures {
    true_peak: u64,
    vpa_target: Vec<f64>,
    promql_max: Vec<f64>,
    promql_p95: Vec<f64>,
}

/// The scraped figures at every phase of a 60 s scrape.
fn figures(name: &str) -> Figures {
    let s = samples(name);
    assert!(s.len() > 120, "{name}: {} samples", s.len());
    let ws: Vec<(i64, u64)> = s.iter().map(|(t, w, _)| (*t, *w)).collect();
    let true_peak = s.iter().map(|(_, _, p)| *p).max().unwrap();
    let mut f = Figures {
        true_peak,
        vpa_target: Vec::new(),
        promql_max: Vec::new(),
        promql_p95: Vec::new(),
    };
    for phase in 0..60 {
        let scraped = scrape(&ws, 60, phase);
        f.vpa_target
            .push(vpa(&scraped, &[], &VpaOptions::default()).unwrap().target);
        let points = subquery(&scraped, 300);
        f.promql_max
            .push(max_over_time(&points).map_or(0.0, |v| v as f64));
        f.promql_p95
            .push(quantile_over_time(0.95, &points).unwrap_or(0.0));
    }
    f
}

fn covering(values: &[f64], peak: u64) -> usize {
    values.iter().filter(|v| **v >= peak as f64).count()
}

fn range(values: &[f64]) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    format!("{:.0}–{:.0}", lo / MIB, hi / MIB)
}

#[test]
fn rightsize_covers_the_spikes_that_scrapes_miss_and_asks_less_for_page_cache() {
    println!(
        "| pod | true peak (memory.peak) | rightsize request | rightsize limit | VPA-style target (60 s scrape; range over the 60 phases) | phases where VPA covers the peak | max_over_time [7d:5m] | phases covering | quantile_over_time(0.95) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut spiky_vpa_cover = 0;
    for name in ["steady", "spiky", "logs"] {
        let f = figures(name);
        let r = rightsize(name);
        let request = r["recommendedRequestBytes"].as_u64().unwrap();
        let limit = r["recommendedLimitBytes"].as_u64().unwrap();
        println!(
            "| {name} | {:.0} MiB | {:.0} MiB | {:.0} MiB | {} MiB | {}/60 | {} MiB | {}/60 | {} MiB |",
            f.true_peak as f64 / MIB,
            request as f64 / MIB,
            limit as f64 / MIB,
            range(&f.vpa_target),
            covering(&f.vpa_target, f.true_peak),
            range(&f.promql_max),
            covering(&f.promql_max, f.true_peak),
            range(&f.promql_p95),
        );
        // The limit covers the true peak of every pod, spikes included (the daemon's peak is
        // the kernel's; the sampler's mark since creation can only be at or below the
        // daemon's last reading plus what came after it, so allow the last second).
        assert!(
            limit as f64 >= f.true_peak as f64 * 0.99,
            "{name}: limit {limit} below the true peak {}",
            f.true_peak
        );
        if name == "spiky" {
            spiky_vpa_cover = covering(&f.vpa_target, f.true_peak);
            // The seed's max_over_time over 5-minute steps misses the spikes at most phases.
            assert!(
                covering(&f.promql_max, f.true_peak) < 30,
                "max_over_time covered the spike at {} phases",
                covering(&f.promql_max, f.true_peak)
            );
        }
        if name == "logs" {
            // Below the VPA-style target at every phase: VPA reads the working set, which
            // counts the active page cache.
            for t in &f.vpa_target {
                assert!(
                    (request as f64) < *t,
                    "logs: request {request} not below VPA's {t}"
                );
            }
        }
    }
    assert!(
        spiky_vpa_cover < 30,
        "the VPA-style target covered the spike at {spiky_vpa_cover} of 60 phases"
    );
}
