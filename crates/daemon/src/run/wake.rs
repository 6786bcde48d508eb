//! What wakes the loop besides its tick: signals (with the stop's watchdog) and kernel PSI
//! triggers.

use std::sync::{Arc, mpsc};
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::engine::Engine;

use super::options::RunError;

/// Forwards signals to the loop from a thread of their own. SIGTERM and SIGINT also set the
/// stop flag and start the stop's watchdog, which the returned sender, dropped when `run`
/// ends, calls off.
pub(super) fn spawn_signal_thread(
    mut signals: signal_hook::iterator::Signals,
    tx: mpsc::Sender<Wake>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> Result<mpsc::Sender<()>, RunError> {
    let (running_tx, running_rx) = mpsc::channel::<()>();
    let mut running_rx = Some(running_rx);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if matches!(signal, SIGTERM | SIGINT) {
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                    if let Some(rx) = running_rx.take() {
                        watchdog(rx);
                    }
                }
                if tx.send(Wake::Signal(signal)).is_err() {
                    break;
                }
            }
        })
        .map_err(RunError::Signals)?;
    Ok(running_tx)
}

/// How long a stop may take before the watchdog ends the process (SIGTERM is honoured
/// within a second, exit included).
pub(crate) const STOP_WITHIN: Duration = Duration::from_millis(800);

/// Starts the watchdog of a stop: unless `running` is closed (the loop ended) within
/// [`STOP_WITHIN`], the process exits (status 0: the stop was asked for and is done), saying
/// so. What a blocked cycle was doing is lost: a recording lacks its end line and reads as
/// truncated.
pub(super) fn watchdog(running: mpsc::Receiver<()>) {
    let spawned = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = running.recv_timeout(STOP_WITHIN) {
                tracing::error!(
                    waited_ms = STOP_WITHIN.as_millis(),
                    "the cycle did not end after the stop signal (a read or a hook is blocked); exiting without it"
                );
                // The one place a library ends the process: a blocked cycle cannot be unwound,
                // and the stop was asked for.
                #[allow(clippy::exit)]
                std::process::exit(0);
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the stop watchdog");
    }
}

/// What wakes the loop besides its tick.
#[derive(Debug)]
pub(super) enum Wake {
    /// A signal.
    Signal(i32),
    /// Kernel PSI triggers fired on these cgroups.
    Pressure(Vec<String>),
}

/// The shortest gap between two event-driven cycles.
pub(super) const MIN_EVENT_GAP: Duration = Duration::from_millis(100);

/// Registers kernel PSI triggers on the protected classes' cgroups (System and Podruntime, as
/// the layout names them now) and wakes the loop from a thread when they fire.
pub(super) fn watch_pressure(engine: &Engine, tx: mpsc::Sender<Wake>) -> Result<(), RunError> {
    let p = engine.settings().warden.psi_triggers;
    let spec = oomwarden_cgroupfs::TriggerSpec {
        full: p.full,
        stall: p.stall,
        window: p.window,
    };
    let dirs = engine.protected_dirs();
    let (mut triggers, errors) =
        oomwarden_cgroupfs::PressureTriggers::register(engine.cgroups(), &dirs, &spec);
    for e in &errors {
        tracing::warn!(error = %e, "cannot register a PSI trigger");
    }
    tracing::info!(
        registered = triggers.len(),
        trigger = %spec.line(),
        "PSI triggers registered on the System and Podruntime cgroups"
    );
    if triggers.is_empty() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("pressure".into())
        .spawn(move || {
            loop {
                match triggers.wait(None) {
                    Ok(fired) if !fired.is_empty() => {
                        if tx.send(Wake::Pressure(fired)).is_err() {
                            break;
                        }
                    }
                    // Nothing fired (an interrupted wait): do not spin.
                    Ok(_) => std::thread::sleep(MIN_EVENT_GAP),
                    Err(e) => {
                        tracing::error!(error = %e, "waiting for PSI triggers failed; detection falls back to the tick");
                        break;
                    }
                }
                if triggers.is_empty() {
                    tracing::warn!("every PSI trigger's cgroup went away; detection falls back to the tick");
                    break;
                }
            }
        })
        .map_err(RunError::Signals)?;
    Ok(())
}
