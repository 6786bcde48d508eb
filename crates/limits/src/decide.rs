//! The decision for one namespace: the settings, what is observed there and the time in; the
//! action, its reason, the writes and the notice out. The controller performs the writes; `plan`
//! prints them.

use oomwarden_kube::audit::Blocker;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cluster::{LimitRangeView, NamespaceView};
use crate::settings::{Amount, Names, Settings};
use crate::state::{self, Hold, Valid};

/// What happens to a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The default is (or is made) in force.
    Apply,
    /// What the controller wrote there is removed.
    Withdraw,
    /// Held: no default until an administrator acknowledges the hold.
    Hold,
    /// Nothing of the controller's is there and nothing is written (a foreign memory policy,
    /// a same-named LimitRange not the controller's, an invalid state, the feature disabled).
    Leave,
    /// Not reconciled (the selection): the controller's LimitRange, if any, is removed.
    Exclude,
}

impl Action {
    /// `apply`, `withdraw`, `hold`, `leave`, `exclude`.
    pub fn name(self) -> &'static str {
        match self {
            Action::Apply => "apply",
            Action::Withdraw => "withdraw",
            Action::Hold => "hold",
            Action::Leave => "leave",
            Action::Exclude => "exclude",
        }
    }
}

/// One change to the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "write", rename_all = "camelCase")]
pub enum Write {
    /// Create the LimitRange, or replace the controller's own of that name.
    #[serde(rename_all = "camelCase")]
    PutLimitRange {
        /// Its name.
        name: String,
        /// `default.memory`.
        limit: String,
        /// `defaultRequest.memory`.
        request: String,
    },
    /// Delete one of the controller's LimitRanges.
    DeleteLimitRange {
        /// Its name.
        name: String,
    },
    /// Put the system label on the Namespace.
    SetLabel {
        /// Key.
        key: String,
        /// Value.
        value: String,
    },
    /// Take the system label off the Namespace.
    RemoveLabel {
        /// Key.
        key: String,
    },
    /// Write the state annotation.
    SetState {
        /// The annotation.
        annotation: String,
        /// Its JSON text.
        value: String,
    },
    /// Remove the acknowledgement annotation (consumed or rejected).
    RemoveAck {
        /// The annotation.
        annotation: String,
    },
}

/// What is said about a change (an Event on the Namespace, a log line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// The Event's reason (`DefaultApplied`, `DefaultWithheld`, `HoldRotated`,
    /// `AcknowledgementRejected`, `DefaultWithdrawn`).
    pub reason: &'static str,
    /// Whether it is a warning.
    pub warning: bool,
    /// The Event's note.
    pub message: String,
}

/// The decision for one namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The namespace.
    pub namespace: String,
    /// What happens.
    pub action: Action,
    /// Why, in words.
    pub reason: String,
    /// Containers whose request is above the limit and which declare no limit of their own.
    pub blockers: Vec<Blocker>,
    /// The token that acknowledges the hold (`<hold>:<target>`), when held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// Other LimitRanges that say something about memory, with the fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreign: Vec<String>,
    /// Whether the controller's LimitRange is in force once the writes are made.
    pub defaulted: bool,
    /// The state after the writes, as read back (`None`: none kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The changes, in order.
    pub writes: Vec<Write>,
    /// What to say, when something changes that an operator should hear of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<Notice>,
}

/// The LimitRange's `spec.limits` for `limit` and `request`.
pub fn desired_limits(limit: &Amount, request: &Amount) -> Value {
    json!([{
        "type": "Container",
        "default": { "memory": limit.text },
        "defaultRequest": { "memory": request.text },
    }])
}

/// Decides for one namespace. `now_unix` (seconds) names a new hold's generation.
pub fn decide(settings: &Settings, ns: &NamespaceView, now_unix: i64) -> Decision {
    let seen = Seen::new(settings, ns);
    let mut d = Decision {
        namespace: ns.name.clone(),
        action: Action::Leave,
        reason: String::new(),
        blockers: Vec::new(),
        hold: None,
        foreign: Vec::new(),
        defaulted: false,
        state: ns
            .annotations
            .get(&settings.names.state_annotation)
            .cloned(),
        writes: Vec::new(),
        notice: None,
    };
    match &settings.limit {
        None => seen.disabled(&mut d),
        Some(limit) => {
            if let Some(state) = seen.gates(&mut d, limit) {
                seen.protocol(&mut d, limit, &state, now_unix);
            }
        }
    }
    d
}

/// One namespace as the rules see it.
struct Seen<'a> {
    settings: &'a Settings,
    names: &'a Names,
    ns: &'a NamespaceView,
    /// Its LimitRanges carrying the ownership label (the controller's, whatever their name).
    owned: Vec<&'a LimitRangeView>,
}

impl<'a> Seen<'a> {
    fn new(settings: &'a Settings, ns: &'a NamespaceView) -> Seen<'a> {
        let names = &settings.names;
        Seen {
            settings,
            names,
            ns,
            owned: ns
                .limit_ranges
                .iter()
                .filter(|lr| names.managed_by.on(&lr.labels))
                .collect(),
        }
    }

    /// Removes everything the controller wrote here (the state stays); with `why`, says so.
    fn withdraw(&self, d: &mut Decision, why: Option<&str>) {
        for lr in &self.owned {
            d.writes.push(Write::DeleteLimitRange {
                name: lr.name.clone(),
            });
        }
        if self.ns.labels.contains_key(&self.names.system_label.key) {
            d.writes.push(Write::RemoveLabel {
                key: self.names.system_label.key.clone(),
            });
        }
        if let Some(why) = why
            && !self.owned.is_empty()
        {
            d.notice = Some(Notice {
                reason: "DefaultWithdrawn",
                warning: false,
                message: format!("The default container memory limit is withdrawn: {why}."),
            });
        }
    }

    /// Withdraws, and the action says whether there was anything to withdraw.
    fn withdraw_all(&self, d: &mut Decision, why: &str, reason: String) {
        d.reason = reason;
        self.withdraw(d, Some(why));
        d.action = if self.owned.is_empty() {
            Action::Leave
        } else {
            Action::Withdraw
        };
    }

    /// Rule 1: disabled, every owned LimitRange goes, even where the state is invalid.
    fn disabled(&self, d: &mut Decision) {
        self.withdraw_all(
            d,
            "the feature is disabled",
            format!(
                "the default limit is 0 (disabled): every LimitRange labelled {} is removed",
                self.names.managed_by
            ),
        );
    }

    /// The rules that end the decision before the safety protocol: not selected, a foreign
    /// memory policy, the name taken, an invalid state, an unreadable object. The valid state
    /// when none applies, with the blockers for `limit` in `d`.
    fn gates(&self, d: &mut Decision, limit: &Amount) -> Option<Valid> {
        let (ns, names) = (self.ns, self.names);
        if let Some(why) = self.settings.selection.excluded(&ns.name, &ns.labels) {
            d.reason = format!("not reconciled: {why}");
            self.withdraw(d, Some("the namespace is no longer selected"));
            d.action = Action::Exclude;
            return None;
        }
        let not_ours = || {
            ns.limit_ranges
                .iter()
                .filter(|lr| !names.managed_by.on(&lr.labels))
        };
        d.foreign = not_ours()
            .filter_map(|lr| {
                let fields = lr.memory_fields();
                (!fields.is_empty())
                    .then(|| format!("LimitRange/{} ({})", lr.name, fields.join(", ")))
            })
            .collect();
        if !d.foreign.is_empty() {
            let reason = format!(
                "a foreign memory policy governs the namespace: {}",
                d.foreign.join("; ")
            );
            self.withdraw_all(d, "another LimitRange says something about memory", reason);
            return None;
        }
        if not_ours().any(|lr| lr.name == names.limit_range) {
            let reason = format!(
                "LimitRange/{} is there without the label {}: it is neither overwritten nor adopted, and the namespace gets no default until the name is free",
                names.limit_range, names.managed_by
            );
            self.withdraw_all(
                d,
                "its name is taken by a LimitRange not the controller's",
                reason,
            );
            return None;
        }
        let state = match ns.annotations.get(&names.state_annotation) {
            None => Valid::default(),
            Some(text) => match state::parse(text) {
                Ok(v) => v,
                Err(e) => {
                    d.reason = format!(
                        "the annotation {} is invalid ({e}): no new default until an administrator repairs it",
                        names.state_annotation
                    );
                    return None;
                }
            },
        };
        let limit_bytes = i64::try_from(limit.bytes).unwrap_or(i64::MAX);
        match ns.objects.audit(None, Some(limit_bytes)) {
            Ok(a) => d.blockers = a.blockers,
            Err(e) => {
                d.reason = format!("the blocker scan cannot read an object ({e}): no new default");
                return None;
            }
        }
        Some(state)
    }

    /// The controller's own LimitRange of the configured name.
    fn ours(&self) -> Option<&'a LimitRangeView> {
        self.owned
            .iter()
            .copied()
            .find(|lr| lr.name == self.names.limit_range)
    }

    /// The safety protocol: hold (blockers, lowering, an unacknowledged hold) or apply; the
    /// state written when it changes.
    fn protocol(&self, d: &mut Decision, limit: &Amount, state: &Valid, now_unix: i64) {
        // The previous limit: remembered in the state, and the controller's own LimitRange as
        // it stands (a state removed by hand must not turn a lowering into an ordinary apply).
        // Never a Pod's limits or its `kubernetes.io/limit-ranger` annotation.
        let in_force = self
            .ours()
            .and_then(|lr| lr.container_defaults().0)
            .and_then(|t| Amount::parse(&t).ok());
        let lowering = state
            .last_limit
            .clone()
            .max(in_force)
            .filter(|p| limit.bytes < p.bytes)
            .map(|p| {
                format!(
                    "the default limit would be lowered from {p} to {limit}: a stored limit cannot prove that a workload's source declares one"
                )
            });
        let blocked = blocker_text(&d.blockers, limit);
        let mut next = state.clone();
        match self.next_hold(d, state, limit, blocked.or(lowering), now_unix) {
            Some(hold) => {
                d.reason = format!("{}{}", hold.reason, d.reason);
                d.hold = Some(hold.token());
                d.action = Action::Hold;
                self.withdraw(d, None);
                next.hold = Some(hold);
            }
            None => {
                next.hold = None;
                next.last_limit = Some(limit.clone());
                self.apply(d, state.hold.is_some(), limit);
            }
        }
        let json = next.to_json();
        // Compared as states, not as text: a state written by another tool in another key
        // order is not rewritten.
        if d.state.as_deref().map(state::parse) != Some(Ok(next)) {
            d.writes.push(Write::SetState {
                annotation: self.names.state_annotation.clone(),
                value: json.clone(),
            });
        }
        d.state = Some(json);
    }

    /// The default applied: the LimitRange written unless in place, the controller's leftovers
    /// under other names deleted, the system label set.
    fn apply(&self, d: &mut Decision, acknowledged: bool, limit: &Amount) {
        let (names, request) = (self.names, &self.settings.request);
        let desired = desired_limits(limit, request);
        let in_place = self
            .ours()
            .is_some_and(|lr| Value::Array(lr.limits.clone()) == desired);
        if !in_place {
            d.writes.push(Write::PutLimitRange {
                name: names.limit_range.clone(),
                limit: limit.text.clone(),
                request: request.text.clone(),
            });
            d.notice = Some(Notice {
                reason: "DefaultApplied",
                warning: false,
                message: format!(
                    "The default container memory limit {limit} (request {request}) is applied{}; existing pods keep their resources.",
                    if acknowledged {
                        " after an acknowledgement and a clean scan"
                    } else {
                        ""
                    }
                ),
            });
        }
        for lr in self.owned.iter().filter(|lr| lr.name != names.limit_range) {
            d.writes.push(Write::DeleteLimitRange {
                name: lr.name.clone(),
            });
        }
        if !names.system_label.on(&self.ns.labels) {
            d.writes.push(Write::SetLabel {
                key: names.system_label.key.clone(),
                value: names.system_label.value.clone(),
            });
        }
        d.reason = match (acknowledged, in_place) {
            (true, _) => "acknowledged, and the scan is clean".to_owned(),
            (false, true) => format!("the default {limit} is in place"),
            (false, false) => format!("no blocker for the default {limit}"),
        };
        d.action = Action::Apply;
        d.defaulted = true;
    }

    /// The hold after this reconcile: a new or rotated one, the same, or none (an accepted
    /// acknowledgement, or nothing to hold). `unsafe_because`: why a default would be unsafe
    /// now (a blocker first, else a lowering). The acknowledgement's removal and the notice go
    /// into `d`.
    fn next_hold(
        &self,
        d: &mut Decision,
        state: &Valid,
        limit: &Amount,
        unsafe_because: Option<String>,
        now_unix: i64,
    ) -> Option<Hold> {
        let ack_annotation = &self.names.ack_annotation;
        let ack = self.ns.annotations.get(ack_annotation).map(|a| a.trim());
        let blocked = !d.blockers.is_empty();
        let Some(h) = &state.hold else {
            let hold = Hold {
                generation: next_generation(now_unix, None),
                target: limit.clone(),
                reason: unsafe_because?,
            };
            d.notice = Some(Notice {
                reason: "DefaultWithheld",
                warning: true,
                message: format!(
                    "The default container memory limit {limit} is withheld: {}. Acknowledge with {ack_annotation}={}.",
                    hold.reason,
                    hold.token()
                ),
            });
            return Some(hold);
        };
        if h.target.bytes != limit.bytes {
            let hold = Hold {
                generation: next_generation(now_unix, Some(&h.generation)),
                target: limit.clone(),
                reason: unsafe_because.unwrap_or_else(|| {
                    format!(
                        "the configured limit changed from {} to {limit} while held",
                        h.target
                    )
                }),
            };
            d.notice = Some(Notice {
                reason: "HoldRotated",
                warning: true,
                message: format!(
                    "The configured limit changed while held; acknowledge the new target with {ack_annotation}={}.",
                    hold.token()
                ),
            });
            return Some(hold);
        }
        if ack != Some(h.token().as_str()) {
            if let Some(a) = ack {
                d.reason = format!("; the acknowledgement {a:?} is not this hold's token");
            }
            return Some(h.clone());
        }
        // The token matches: consumed, whatever follows.
        d.writes.push(Write::RemoveAck {
            annotation: ack_annotation.clone(),
        });
        if !blocked {
            return None;
        }
        let hold = Hold {
            reason: format!(
                "the acknowledgement {} was rejected: {}",
                h.token(),
                unsafe_because.unwrap_or_default()
            ),
            ..h.clone()
        };
        d.notice = Some(Notice {
            reason: "AcknowledgementRejected",
            warning: true,
            message: format!("{}.", hold.reason),
        });
        Some(hold)
    }
}

/// A new hold's generation: the time in seconds, past the previous one (so a target changed
/// back to an earlier value still gets a token of its own).
fn next_generation(now_unix: i64, previous: Option<&str>) -> String {
    let after = previous
        .and_then(|p| p.parse::<i64>().ok())
        .map_or(i64::MIN, |p| p.saturating_add(1));
    now_unix.max(after).to_string()
}

fn blocker_text(blockers: &[Blocker], limit: &Amount) -> Option<String> {
    let first = blockers.first()?;
    let more = match blockers.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more container)".to_owned(),
        n => format!(" (and {n} more containers)"),
    };
    Some(format!(
        "{} container {} requests {} memory, above the default limit {limit}, and declares no limit of its own{more}",
        first.object, first.container, first.request
    ))
}
