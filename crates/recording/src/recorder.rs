//! The recorder: cycles in, recording text out, for a file and for the in-memory window of
//! the flight recorder.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::format::{Cycle, END_LINE, Encoder, Meta, Observation, Wakeup, header};

/// A new segment starts after this long (10 s): the flight recorder drops whole segments, and a
/// reader can start at any of them.
pub const SEGMENT_NS: u64 = 10_000_000_000;

#[derive(Debug)]
struct Segment {
    first_ns: u64,
    /// The last trigger before this segment.
    trigger_before: Option<u64>,
    text: String,
}

/// Encodes cycles; keeps the last `window` of them in memory when asked to.
#[derive(Debug)]
pub struct Recorder {
    meta: Meta,
    encoder: Encoder,
    segment_started: Option<u64>,
    window_ns: Option<u64>,
    ring: VecDeque<Segment>,
    last_trigger: Option<u64>,
    /// The trigger of the cycle being recorded, for its `t` line.
    pending_trigger: Option<u64>,
}

impl Recorder {
    /// A recorder; `window_ns` keeps that much history in memory (the flight recorder).
    pub fn new(meta: Meta, window_ns: Option<u64>) -> Self {
        Recorder {
            meta,
            encoder: Encoder::default(),
            segment_started: None,
            window_ns,
            ring: VecDeque::new(),
            last_trigger: None,
            pending_trigger: None,
        }
    }

    /// The metadata.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Replaces the configuration text in the metadata (after a reload).
    pub fn set_config(&mut self, config: Option<String>) {
        self.meta.config = config;
    }

    /// The header lines of a file.
    pub fn header(&self) -> String {
        header(&self.meta)
    }

    /// Records one cycle's reads and returns its text (to append to a file).
    pub fn cycle(
        &mut self,
        at_ns: u64,
        wakeup: Wakeup,
        reads: Vec<(Arc<str>, Observation)>,
    ) -> String {
        self.cycle_with(at_ns, wakeup, reads, None)
    }

    /// As [`Recorder::cycle`], with the pod identities the cycle ranked with (written when
    /// they changed, and at each segment start).
    pub fn cycle_with(
        &mut self,
        at_ns: u64,
        wakeup: Wakeup,
        reads: Vec<(Arc<str>, Observation)>,
        identities: Option<Arc<oomwarden_model::Identities>>,
    ) -> String {
        let new_segment = self
            .segment_started
            .is_none_or(|t| at_ns.saturating_sub(t) >= SEGMENT_NS);
        if new_segment {
            self.segment_started = Some(at_ns);
        }
        let mut text = String::new();
        self.encoder.encode(
            Cycle {
                at_ns,
                wakeup,
                reads,
                identities,
                triggered_at: self.pending_trigger.take(),
            },
            new_segment,
            &mut text,
        );
        if let Some(window) = self.window_ns {
            if new_segment {
                self.ring.push_back(Segment {
                    first_ns: at_ns,
                    trigger_before: self.last_trigger,
                    text: String::new(),
                });
            }
            // The oldest segment goes once the next one alone covers the window.
            while self
                .ring
                .get(1)
                .is_some_and(|s| at_ns.saturating_sub(s.first_ns) >= window)
            {
                self.ring.pop_front();
            }
            if let Some(segment) = self.ring.back_mut() {
                segment.text.push_str(&text);
            }
        }
        text
    }

    /// The trigger fired in the cycle being recorded, its cooldown counting from `at_ns` (a
    /// window starting later carries it; the cycle's `t` line says it).
    pub fn triggered(&mut self, at_ns: u64) {
        self.last_trigger = Some(at_ns);
        self.pending_trigger = Some(at_ns);
    }

    /// The in-memory window as a recording (at least the last `window`, from a segment start).
    pub fn window(&self) -> String {
        let mut out = header(&Meta {
            source: "flight-recorder".to_owned(),
            last_trigger_ns: self.ring.front().and_then(|s| s.trigger_before),
            ..self.meta.clone()
        });
        for segment in &self.ring {
            out.push_str(&segment.text);
        }
        out.push_str(END_LINE);
        out
    }

    /// Bytes held by the window.
    pub fn window_bytes(&self) -> usize {
        self.ring.iter().map(|s| s.text.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::parse;

    fn meta() -> Meta {
        crate::format::tests_meta()
    }

    #[test]
    fn the_window_keeps_whole_segments_covering_it() {
        let mut r = Recorder::new(meta(), Some(20_000_000_000));
        let path: Arc<str> = Arc::from("/cg/memory.current");
        for i in 0..100u64 {
            let at = i * 1_000_000_000;
            let text = r.cycle(
                at,
                Wakeup::Tick,
                vec![(
                    Arc::clone(&path),
                    Observation::File(i.to_string().into_bytes()),
                )],
            );
            assert!(text.contains(&format!("c {at} tick")));
        }
        let window = parse(&r.window()).unwrap();
        assert_eq!(window.meta.source, "flight-recorder");
        let first = window.cycles.first().unwrap().at_ns;
        let last = window.cycles.last().unwrap().at_ns;
        assert_eq!(last, 99_000_000_000);
        // At least 20 s, at most 20 s plus one segment.
        assert!(
            last - first >= 20_000_000_000 && last - first < 30_000_000_000,
            "{first}"
        );
        // It starts at a segment boundary: its first cycle lists its read.
        assert_eq!(window.cycles[0].reads.len(), 1);
        assert!(r.window_bytes() > 0);
    }

    /// Version 4: the cycle where the trigger fired says when its cooldown counts from.
    #[test]
    fn a_cycle_says_when_its_trigger_fired() {
        let mut r = Recorder::new(meta(), None);
        let mut text = r.header();
        for i in 0..3u64 {
            let at = i * 1_000_000_000;
            if i == 1 {
                // After a kill that took 0.4 s.
                r.triggered(at + 400_000_000);
            }
            text.push_str(&r.cycle(at, Wakeup::Tick, Vec::new()));
        }
        text.push_str(crate::END_LINE);
        assert!(text.contains("\nt 1400000000\n"), "{text}");
        let parsed = parse(&text).unwrap();
        let triggers: Vec<_> = parsed.cycles.iter().map(|c| c.triggered_at).collect();
        assert_eq!(triggers, [None, Some(1_400_000_000), None]);
        // A trigger before its cycle, or before any cycle, is refused.
        for bad in ["t 1\nc 5 tick\n", "c 5 tick\nt 4\n"] {
            let text = format!("{}{bad}{}", r.header(), crate::END_LINE);
            assert!(parse(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_window_carries_the_last_trigger_before_it() {
        let mut r = Recorder::new(meta(), Some(10_000_000_000));
        for i in 0..40u64 {
            let at = i * 1_000_000_000;
            if i == 3 {
                r.triggered(at);
            }
            r.cycle(at, Wakeup::Tick, Vec::new());
        }
        let window = parse(&r.window()).unwrap();
        assert!(window.cycles[0].at_ns > 3_000_000_000);
        assert_eq!(window.meta.last_trigger_ns, Some(3_000_000_000));
    }

    #[test]
    fn without_a_window_nothing_is_kept() {
        let mut r = Recorder::new(meta(), None);
        r.cycle(1, Wakeup::Tick, Vec::new());
        assert_eq!(r.window_bytes(), 0);
    }
}
