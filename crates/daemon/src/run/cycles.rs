//! The loop: a cycle per tick or wake-up, the kernel-OOM watch after each, and the status
//! the action API serves.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use signal_hook::consts::SIGHUP;

use crate::engine::{CycleOutcome, Engine};
use oomwarden_node::{Declared, monotonic_ns, next_tick, wall_clock};

use super::options::RunOptions;
use super::reload::{ConfigWatch, reload};
use super::wake::{MIN_EVENT_GAP, Wake};

/// What the loop holds besides the engine: the state directory and the descriptor budget.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held<'a> {
    pub(super) state: Option<&'a crate::statedir::StateDir>,
    pub(super) descriptors: super::setup::Descriptors,
}

/// The loop: a cycle every tick (and on each PSI wake-up, at most one per
/// [`MIN_EVENT_GAP`]), reloads on SIGHUP or a changed file, until a stop signal or
/// `options.cycles`.
pub(super) fn cycle_until_stopped(
    engine: &mut Engine,
    rx: &mpsc::Receiver<Wake>,
    options: &RunOptions,
    shared: &crate::api::SharedState,
    config_watch: &mut ConfigWatch,
    mut declared: Declared,
    held: Held<'_>,
) {
    let mut kernel = crate::kernel::KernelWatch::start(
        engine,
        &engine.settings().warden.kernel_oom_watch.clone(),
        monotonic_ns(),
    );
    let mut usage = start_usage(engine, shared, held);
    // Its reads at start are no cycle's.
    engine.discard_reads();
    let metrics = engine.metrics();
    let mut done = 0u64;
    let mut tick = Instant::now();
    let mut last_cycle: Option<Instant> = None;
    // SIGHUPs are coalesced: at most one reload between two cycles. The first since the last
    // cycle reloads at once; later ones wait and are one reload before the first cycle that
    // follows a cycle without a reload. A storm neither starves the cycles nor forces extra
    // ones (found by the fault suite: 2 cycles in 6 s under a SIGHUP storm).
    let mut reloaded_since_cycle = false;
    let mut reload_pending = false;
    loop {
        let wait = tick.saturating_duration_since(Instant::now());
        let mut on_pressure = false;
        match rx.recv_timeout(wait) {
            Ok(Wake::Signal(SIGHUP)) => {
                if reloaded_since_cycle {
                    reload_pending = true;
                } else {
                    // Taken before the read, as at start.
                    config_watch.refresh();
                    let interval = engine.settings().oom.sample_interval;
                    reload(engine, options, Some(shared), &mut declared);
                    reloaded_since_cycle = true;
                    reload_pending = false;
                    // A shorter interval is not waited out on the old one.
                    let now_interval = engine.settings().oom.sample_interval;
                    if now_interval < interval {
                        tick = tick.min(Instant::now() + now_interval);
                    }
                }
                // A due cycle is never skipped for a signal.
                if Instant::now() < tick {
                    continue;
                }
            }
            Ok(Wake::Signal(signal)) => {
                tracing::info!(signal, "oomwarden stopping");
                break;
            }
            Ok(Wake::Pressure(cgroups)) => {
                // A cycle now; at most one per MIN_EVENT_GAP however many triggers fire.
                if last_cycle.is_some_and(|t: Instant| t.elapsed() < MIN_EVENT_GAP) {
                    continue;
                }
                metrics.pressure_event();
                tracing::debug!(cgroups = ?cgroups, "pressure event: cycling now");
                on_pressure = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        // A ConfigMap update arrives as a symlink swap, without a signal.
        if config_watch.changed() {
            tracing::info!("the configuration file changed on disk; reloading");
            reload(engine, options, Some(shared), &mut declared);
            reload_pending = false;
        } else if reload_pending && !reloaded_since_cycle {
            reload_pending = false;
            config_watch.refresh();
            reload(engine, options, Some(shared), &mut declared);
        }
        reloaded_since_cycle = false;
        rewatch_if_changed(engine, &mut kernel);
        reusage_if_changed(engine, &mut usage, held, shared);
        let started = Instant::now();
        last_cycle = Some(started);
        let wall = wall_clock();
        let outcome = if on_pressure {
            engine.cycle_on_pressure(monotonic_ns(), &wall)
        } else {
            engine.cycle(monotonic_ns(), &wall)
        };
        let took = started.elapsed();
        metrics.cycle(took.as_secs_f64());
        metrics.health().cycle_done(monotonic_ns());
        // After the cycle and outside its timing: the kernel's kills are recorded, not acted on.
        let new_kernel_records = kernel_after_cycle(kernel.as_mut(), engine);
        usage_after_cycle(usage.as_mut(), engine, &outcome);
        publish(shared, engine, &outcome, &wall, took);
        publish_kernel(shared, engine, kernel.as_ref(), new_kernel_records);
        done += 1;
        if options.cycles.is_some_and(|n| done >= n) {
            break;
        }
        if on_pressure {
            // The tick schedule stays as it was.
            continue;
        }
        let (next, skipped) =
            next_tick(tick, engine.settings().oom.sample_interval, Instant::now());
        if skipped > 0 {
            tracing::debug!(
                skipped,
                cycle_ms = started.elapsed().as_millis(),
                "slow cycle; skipped ticks"
            );
        }
        tick = next;
    }
    // The history's last readings are kept for the next start.
    if let Some(mut u) = usage {
        u.save(chrono::Utc::now().timestamp(), &engine.metrics())
    }
}

/// After a cycle and outside its timing: the kernel's kills are recorded, not acted on.
/// Whether records were written.
fn kernel_after_cycle(
    kernel: Option<&mut crate::kernel::KernelWatch>,
    engine: &mut Engine,
) -> bool {
    let Some(k) = kernel else {
        return false;
    };
    let written = k.poll(engine, monotonic_ns());
    // Its counter reads are no cycle's: kept out of the recording.
    engine.discard_reads();
    !written.is_empty()
}

/// The usage history at start, shared with the action API.
fn start_usage(
    engine: &Engine,
    shared: &crate::api::SharedState,
    held: Held<'_>,
) -> Option<crate::usage::UsageWatch> {
    let usage = crate::usage::UsageWatch::start(
        &engine.settings().warden.usage_history,
        held.state,
        held.descriptors.marks,
        monotonic_ns(),
    );
    share_usage(shared, usage.as_ref());
    usage
}

/// After a cycle: its kill joins the usage history, which reads the pods when due.
fn usage_after_cycle(
    usage: Option<&mut crate::usage::UsageWatch>,
    engine: &Engine,
    outcome: &CycleOutcome,
) {
    let Some(u) = usage else {
        return;
    };
    let unix = chrono::Utc::now().timestamp();
    if let CycleOutcome::Acted(record) = outcome {
        u.record(record, unix);
    }
    if u.poll(engine, monotonic_ns(), unix) {
        // Its reads are no cycle's either.
        engine.discard_reads();
    }
}

/// Tells the action API which usage history to serve (none when it is off).
fn share_usage(shared: &crate::api::SharedState, usage: Option<&crate::usage::UsageWatch>) {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .usage = usage.map(crate::usage::UsageWatch::shared);
}

/// Applies a reload's `usageHistory`: the parameters change in place (the history is kept);
/// turned off, the history is saved and dropped; turned on, it is loaded (the action API told
/// either way).
fn reusage_if_changed(
    engine: &Engine,
    usage: &mut Option<crate::usage::UsageWatch>,
    held: Held<'_>,
    shared: &crate::api::SharedState,
) {
    let wanted = engine.settings().warden.usage_history;
    let replaced = match usage.as_mut() {
        Some(u) if *u.settings() == wanted => false,
        Some(u) if wanted.enabled => {
            u.set_settings(wanted);
            false
        }
        Some(u) => {
            u.save(chrono::Utc::now().timestamp(), &engine.metrics());
            *usage = None;
            true
        }
        None if wanted.enabled => {
            *usage = crate::usage::UsageWatch::start(
                &wanted,
                held.state,
                held.descriptors.marks,
                monotonic_ns(),
            );
            true
        }
        None => false,
    };
    if replaced {
        share_usage(shared, usage.as_ref());
    }
}

/// Updates what the action API serves after a cycle.
pub(super) fn publish(
    shared: &crate::api::SharedState,
    engine: &Engine,
    outcome: &CycleOutcome,
    wall: &str,
    took: Duration,
) {
    let mut s = shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let st = &mut s.status;
    st.cycles += 1;
    st.last_cycle_at = Some(wall.to_owned());
    st.last_cycle_ms = Some((took.as_secs_f64() * 1e6).round() / 1e3);
    st.layout = engine.layout_name().to_owned();
    st.pod_identity = engine
        .identity()
        .map(|c| crate::api::PodIdentityStatus::of(&c.status()));
    match outcome {
        CycleOutcome::Quiet => st.last_cycle_result = Some("quiet".to_owned()),
        CycleOutcome::Skipped(error) => {
            st.last_cycle_result = Some("skipped".to_owned());
            st.last_error = Some(format!("{wall}: {error}"));
            st.errors += 1;
        }
        CycleOutcome::Acted(record) => {
            st.last_cycle_result = Some(record.outcome.name().to_owned());
            st.last_trigger_at = Some(wall.to_owned());
            s.records = engine.history().recent().cloned().collect();
        }
    }
}

/// What the action API serves about the kernel's kills: the count, and the records when new
/// ones were written.
pub(super) fn publish_kernel(
    shared: &crate::api::SharedState,
    engine: &Engine,
    kernel: Option<&crate::kernel::KernelWatch>,
    new_records: bool,
) {
    let mut s = shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    s.status.kernel_oom_kills = kernel.map(crate::kernel::KernelWatch::kills);
    if new_records {
        s.records = engine.history().recent().cloned().collect();
    }
}

/// Starts, stops or restarts the kernel-OOM watch when a reload changed its settings (the
/// count of kills starts again).
pub(super) fn rewatch_if_changed(engine: &Engine, kernel: &mut Option<crate::kernel::KernelWatch>) {
    let wanted = &engine.settings().warden.kernel_oom_watch;
    let running = kernel.as_ref().map(crate::kernel::KernelWatch::settings);
    if running == Some(wanted) || (running.is_none() && !wanted.enabled) {
        return;
    }
    if let Some(mut old) = kernel.take() {
        old.stop();
    }
    *kernel = crate::kernel::KernelWatch::start(engine, wanted, monotonic_ns());
    engine.discard_reads();
}
