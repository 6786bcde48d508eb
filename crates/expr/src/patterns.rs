//! The patterns of `matches()`: Go's regexp dialect (see `oomwarden-goregexp`), compiled once.
//!
//! A pattern written as a literal is compiled with its expression and held by it
//! ([`Held`]); evaluation finds it by its text. A pattern computed at evaluation time is
//! compiled when first met and kept among the last [`RECENT`] such patterns. cel-go compiles
//! at evaluation, so a pattern Go refuses is an evaluation error (Go's text), never a
//! compile error, and only where the call is evaluated.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError, Weak};

use oomwarden_goregexp::{Regex, RegexError};

/// A compiled pattern or Go's reason for refusing it.
type Compiled = Result<Regex, RegexError>;
/// Shared by the expressions and evaluations that use one pattern.
pub(crate) type Pattern = Arc<Compiled>;

/// Patterns computed at evaluation time kept compiled.
const RECENT: usize = 32;

/// Literal patterns of the compiled expressions alive, by text.
static HELD: LazyLock<Mutex<HashMap<Box<str>, Weak<Compiled>>>> = LazyLock::new(Mutex::default);
/// Computed patterns by text, most recent last.
type Recent = VecDeque<(Box<str>, Pattern)>;
/// Computed patterns, most recent last.
static RECENTLY_USED: LazyLock<Mutex<Recent>> = LazyLock::new(Mutex::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps hold no invariant a panic elsewhere could break.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The literal patterns one expression holds (kept alive as long as the expression).
#[derive(Debug, Default, Clone)]
pub(crate) struct Held(#[allow(dead_code, reason = "held for its Drop")] Arc<[Pattern]>);

impl Held {
    /// Compiles `patterns` (or finds them compiled by another live expression).
    pub(crate) fn new(patterns: &[String]) -> Self {
        let mut held = lock(&HELD);
        held.retain(|_, weak| weak.strong_count() > 0);
        let compiled = patterns
            .iter()
            .map(|text| {
                if let Some(p) = held.get(text.as_str()).and_then(Weak::upgrade) {
                    return p;
                }
                let p: Pattern = Arc::new(Regex::new(text));
                held.insert(text.as_str().into(), Arc::downgrade(&p));
                p
            })
            .collect();
        Self(compiled)
    }
}

/// The compiled `text`: held by an expression, recently used, or compiled now.
pub(crate) fn get(text: &str) -> Pattern {
    if let Some(p) = lock(&HELD).get(text).and_then(Weak::upgrade) {
        return p;
    }
    let mut recent = lock(&RECENTLY_USED);
    if let Some(i) = recent.iter().position(|(t, _)| &**t == text)
        && let Some(entry) = recent.remove(i)
    {
        let p = Arc::clone(&entry.1);
        recent.push_back(entry);
        return p;
    }
    let p: Pattern = Arc::new(Regex::new(text));
    if recent.len() >= RECENT {
        recent.pop_front();
    }
    recent.push_back((text.into(), Arc::clone(&p)));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_pattern_is_compiled_once_and_released_with_its_expression() {
        let text = "^held-once-[0-9]+$".to_owned();
        let held = Held::new(std::slice::from_ref(&text));
        let first = get(&text);
        let second = get(&text);
        assert!(Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&first, &held.0[0]));
        drop((first, second, held));
        assert!(
            lock(&HELD)
                .get(text.as_str())
                .and_then(Weak::upgrade)
                .is_none()
        );
    }

    #[test]
    fn computed_patterns_are_kept_up_to_a_bound() {
        let texts: Vec<String> = (0..RECENT + 5).map(|i| format!("^computed-{i}$")).collect();
        for t in &texts {
            let _ = get(t);
        }
        let recent = lock(&RECENTLY_USED);
        assert!(recent.len() <= RECENT);
        assert!(recent.iter().any(|(t, _)| **t == *texts[RECENT + 4]));
    }
}
