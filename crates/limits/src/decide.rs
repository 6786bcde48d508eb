//! The decision for one namespace: the settings, what is observed there and the time in; the
//! action, its reason, the writes and the notice out. The controller performs the writes; `plan`
//! prints them.

use oomwarden_kube::audit::Blocker;
use serde::Serialize;
use serde_json::{Value, json};

use crate::cluster::{LimitRangeView, NamespaceView};
use crate::settings::{Amount, Settings};
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
#[allow(
    clippy::too_many_lines,
    reason = "the rules in their order, one after the other; the gates still to be split out"
)]
pub fn decide(settings: &Settings, ns: &NamespaceView, now_unix: i64) -> Decision {
    let names = &settings.names;
    let owned: Vec<&LimitRangeView> = ns
        .limit_ranges
        .iter()
        .filter(|lr| names.managed_by.on(&lr.labels))
        .collect();
    let mut d = Decision {
        namespace: ns.name.clone(),
        action: Action::Leave,
        reason: String::new(),
        blockers: Vec::new(),
        hold: None,
        foreign: Vec::new(),
        defaulted: false,
        state: ns.annotations.get(&names.state_annotation).cloned(),
        writes: Vec::new(),
        notice: None,
    };
    // Removes everything the controller wrote here; the state stays.
    let withdraw = |d: &mut Decision, why: &str| {
        for lr in &owned {
            d.writes.push(Write::DeleteLimitRange {
                name: lr.name.clone(),
            });
        }
        if ns.labels.contains_key(&names.system_label.key) {
            d.writes.push(Write::RemoveLabel {
                key: names.system_label.key.clone(),
            });
        }
        if !owned.is_empty() {
            d.notice = Some(Notice {
                reason: "DefaultWithdrawn",
                warning: false,
                message: format!("The default container memory limit is withdrawn: {why}."),
            });
        }
    };
    let withdraw_or_leave = |owned: &[&LimitRangeView]| {
        if owned.is_empty() {
            Action::Leave
        } else {
            Action::Withdraw
        }
    };

    let Some(limit) = &settings.limit else {
        d.reason = format!(
            "the default limit is 0 (disabled): every LimitRange labelled {} is removed",
            names.managed_by
        );
        withdraw(&mut d, "the feature is disabled");
        d.action = withdraw_or_leave(&owned);
        return d;
    };
    if let Some(why) = settings.selection.excluded(&ns.name, &ns.labels) {
        d.reason = format!("not reconciled: {why}");
        withdraw(&mut d, "the namespace is no longer selected");
        d.action = Action::Exclude;
        return d;
    }
    d.foreign = ns
        .limit_ranges
        .iter()
        .filter(|lr| !names.managed_by.on(&lr.labels))
        .filter_map(|lr| {
            let fields = lr.memory_fields();
            (!fields.is_empty()).then(|| format!("LimitRange/{} ({})", lr.name, fields.join(", ")))
        })
        .collect();
    if !d.foreign.is_empty() {
        d.reason = format!(
            "a foreign memory policy governs the namespace: {}",
            d.foreign.join("; ")
        );
        withdraw(&mut d, "another LimitRange says something about memory");
        d.action = withdraw_or_leave(&owned);
        return d;
    }
    if ns
        .limit_ranges
        .iter()
        .any(|lr| lr.name == names.limit_range && !names.managed_by.on(&lr.labels))
    {
        d.reason = format!(
            "LimitRange/{} is there without the label {}: it is neither overwritten nor adopted, and the namespace gets no default until the name is free",
            names.limit_range, names.managed_by
        );
        withdraw(
            &mut d,
            "its name is taken by a LimitRange not the controller's",
        );
        d.action = withdraw_or_leave(&owned);
        return d;
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
                return d;
            }
        },
    };
    let limit_bytes = i64::try_from(limit.bytes).unwrap_or(i64::MAX);
    match ns.objects.audit(None, Some(limit_bytes)) {
        Ok(a) => d.blockers = a.blockers,
        Err(e) => {
            d.reason = format!("the blocker scan cannot read an object ({e}): no new default");
            return d;
        }
    }
    let ours = owned.iter().find(|lr| lr.name == names.limit_range);
    // The previous limit: remembered in the state, and the controller's own LimitRange as it
    // stands (a state removed by hand must not turn a lowering into an ordinary apply).
    // Never a Pod's limits or its `kubernetes.io/limit-ranger` annotation.
    let in_force = ours
        .and_then(|lr| lr.container_defaults().0)
        .and_then(|t| Amount::parse(&t).ok());
    let previous = state.last_limit.clone().max(in_force);
    let lowering = previous
        .as_ref()
        .filter(|p| limit.bytes < p.bytes)
        .map(|p| {
            format!(
                "the default limit would be lowered from {p} to {limit}: a stored limit cannot prove that a workload's source declares one"
            )
        });
    let blocked = blocker_text(&d.blockers, limit);
    let ack = ns
        .annotations
        .get(&names.ack_annotation)
        .map(|a| a.trim().to_owned());
    let mut next = state.clone();
    let held = next_hold(
        &mut d,
        names,
        &state,
        limit,
        ack.as_deref(),
        blocked,
        lowering,
        now_unix,
    );
    match held {
        Some(hold) => {
            d.reason = format!("{}{}", hold.reason, d.reason);
            d.hold = Some(hold.token());
            d.action = Action::Hold;
            let notice = d.notice.take();
            withdraw(&mut d, "held");
            d.notice = notice.or(d.notice.take());
            next.hold = Some(hold);
        }
        None => {
            next.hold = None;
            next.last_limit = Some(limit.clone());
            apply_default(&mut d, settings, ns, &owned, state.hold.is_some(), limit);
        }
    }
    let json = next.to_json();
    // Compared as states, not as text: a state written by another tool in another key order
    // is not rewritten.
    if d.state.as_deref().map(state::parse) != Some(Ok(next)) {
        d.writes.push(Write::SetState {
            annotation: names.state_annotation.clone(),
            value: json.clone(),
        });
    }
    d.state = Some(json);
    d
}

/// The default applied: the LimitRange written unless in place, the controller's leftovers
/// under other names deleted, the system label set.
fn apply_default(
    d: &mut Decision,
    settings: &Settings,
    ns: &NamespaceView,
    owned: &[&LimitRangeView],
    acknowledged: bool,
    limit: &Amount,
) {
    let names = &settings.names;
    let ours = owned.iter().find(|lr| lr.name == names.limit_range);
    let desired = desired_limits(limit, &settings.request);
    let in_place = ours.is_some_and(|lr| Value::Array(lr.limits.clone()) == desired);
    if !in_place {
        d.writes.push(Write::PutLimitRange {
            name: names.limit_range.clone(),
            limit: limit.text.clone(),
            request: settings.request.text.clone(),
        });
        d.notice = Some(Notice {
            reason: "DefaultApplied",
            warning: false,
            message: format!(
                "The default container memory limit {limit} (request {}) is applied{}; existing pods keep their resources.",
                settings.request,
                if acknowledged {
                    " after an acknowledgement and a clean scan"
                } else {
                    ""
                }
            ),
        });
    }
    for lr in owned.iter().filter(|lr| lr.name != names.limit_range) {
        d.writes.push(Write::DeleteLimitRange {
            name: lr.name.clone(),
        });
    }
    if !names.system_label.on(&ns.labels) {
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
/// acknowledgement, or nothing to hold); the acknowledgement's removal and the notice go into
/// `d`.
#[allow(clippy::too_many_arguments)]
fn next_hold(
    d: &mut Decision,
    names: &crate::settings::Names,
    state: &Valid,
    limit: &Amount,
    ack: Option<&str>,
    blocked: Option<String>,
    lowering: Option<String>,
    now_unix: i64,
) -> Option<Hold> {
    match &state.hold {
        Some(h) if h.target.bytes != limit.bytes => {
            let hold = Hold {
                generation: next_generation(now_unix, Some(&h.generation)),
                target: limit.clone(),
                reason: blocked.clone().or(lowering.clone()).unwrap_or_else(|| {
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
                    "The configured limit changed while held; acknowledge the new target with {}={}.",
                    names.ack_annotation,
                    hold.token()
                ),
            });
            Some(hold)
        }
        Some(h) if ack == Some(h.token().as_str()) => {
            d.writes.push(Write::RemoveAck {
                annotation: names.ack_annotation.clone(),
            });
            match &blocked {
                Some(why) => {
                    let hold = Hold {
                        reason: format!("the acknowledgement {} was rejected: {why}", h.token()),
                        ..h.clone()
                    };
                    d.notice = Some(Notice {
                        reason: "AcknowledgementRejected",
                        warning: true,
                        message: format!("{}.", hold.reason),
                    });
                    Some(hold)
                }
                None => None,
            }
        }
        Some(h) => {
            let mut hold = h.clone();
            if let Some(a) = ack {
                d.reason = format!("; the acknowledgement {a:?} is not this hold's token");
            }
            hold.reason = h.reason.clone();
            Some(hold)
        }
        None => blocked.or(lowering).map(|reason| {
            let hold = Hold {
                generation: next_generation(now_unix, None),
                target: limit.clone(),
                reason,
            };
            d.notice = Some(Notice {
                reason: "DefaultWithheld",
                warning: true,
                message: format!(
                    "The default container memory limit {limit} is withheld: {}. Acknowledge with {}={}.",
                    hold.reason,
                    names.ack_annotation,
                    hold.token()
                ),
            });
            hold
        }),
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
