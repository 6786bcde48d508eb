//! The writes of a decision, in a safe order: the Namespace first (one JSON merge patch that
//! carries the resource version the decision read, so an acknowledgement is consumed once and
//! a Namespace changed meanwhile is decided again), then the LimitRanges, each read again first
//! so one that is not the controller's is never replaced or deleted.

use k8s_openapi::api::core::v1::{LimitRange, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use oomwarden_limits::{Decision, NamespaceView, Notice, Write, desired_limits};
use serde_json::{Map, Value, json};

use crate::{Error, Options};

/// The Events' `reportingController`.
pub const REPORTING_CONTROLLER: &str = "oomwarden.io/limits";

fn api_error(what: String) -> impl FnOnce(kube::Error) -> Error {
    move |source| Error::Api { what, source }
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

#[allow(
    clippy::too_many_lines,
    reason = "one write after the other, in their safe order; to be split"
)]
pub(crate) async fn perform(
    client: &kube::Client,
    options: &Options,
    namespace: &Namespace,
    view: &NamespaceView,
    decision: &Decision,
) -> Result<(), Error> {
    let name = view.name.as_str();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    for w in &decision.writes {
        match w {
            Write::SetLabel { key, value } => {
                labels.insert(key.clone(), json!(value));
            }
            Write::RemoveLabel { key } => {
                labels.insert(key.clone(), Value::Null);
            }
            Write::SetState { annotation, value } => {
                annotations.insert(annotation.clone(), json!(value));
            }
            Write::RemoveAck { annotation } => {
                annotations.insert(annotation.clone(), Value::Null);
            }
            Write::PutLimitRange { .. } | Write::DeleteLimitRange { .. } => {}
        }
    }
    if !labels.is_empty() || !annotations.is_empty() {
        let mut metadata = Map::new();
        metadata.insert(
            "resourceVersion".to_owned(),
            json!(namespace.metadata.resource_version),
        );
        if !labels.is_empty() {
            metadata.insert("labels".to_owned(), Value::Object(labels));
        }
        if !annotations.is_empty() {
            metadata.insert("annotations".to_owned(), Value::Object(annotations));
        }
        Api::<Namespace>::all(client.clone())
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": metadata })),
            )
            .await
            .map_err(api_error(format!("patch Namespace {name}")))?;
    }
    let api = Api::<LimitRange>::namespaced(client.clone(), name);
    let managed = &options.settings.names.managed_by;
    let ours = |lr: &LimitRange| {
        lr.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(&managed.key))
            .is_some_and(|v| *v == managed.value)
    };
    for w in &decision.writes {
        match w {
            Write::PutLimitRange {
                name: lr_name,
                limit,
                request,
            } => {
                let what = format!("LimitRange {name}/{lr_name}");
                let current = match api.get(lr_name).await {
                    Ok(lr) => Some(lr),
                    Err(e) if not_found(&e) => None,
                    Err(e) => return Err(api_error(format!("get {what}"))(e)),
                };
                let amount = |t: &str| oomwarden_limits::Amount::parse(t).map_err(Error::Object);
                let body = json!({
                    "apiVersion": "v1", "kind": "LimitRange",
                    "metadata": {
                        "name": lr_name, "namespace": name,
                        "labels": { managed.key.clone(): managed.value },
                        "resourceVersion": current.as_ref().and_then(|c| c.metadata.resource_version.clone()),
                    },
                    "spec": { "limits": desired_limits(&amount(limit)?, &amount(request)?) },
                });
                let object: LimitRange =
                    serde_json::from_value(body).map_err(|e| Error::Object(e.to_string()))?;
                match current {
                    None => {
                        api.create(&PostParams::default(), &object)
                            .await
                            .map_err(api_error(format!("create {what}")))?;
                    }
                    Some(c) if ours(&c) => {
                        api.replace(lr_name, &PostParams::default(), &object)
                            .await
                            .map_err(api_error(format!("replace {what}")))?;
                    }
                    // Not the controller's (made since the decision's read): left alone.
                    Some(_) => {
                        tracing::warn!(namespace = name, limit_range = %lr_name, "not replaced: it is not the controller's");
                    }
                }
            }
            Write::DeleteLimitRange { name: lr_name } => {
                let what = format!("LimitRange {name}/{lr_name}");
                let current = match api.get(lr_name).await {
                    Ok(lr) => lr,
                    Err(e) if not_found(&e) => continue,
                    Err(e) => return Err(api_error(format!("get {what}"))(e)),
                };
                if !ours(&current) {
                    continue;
                }
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: current.metadata.resource_version.clone(),
                        uid: current.metadata.uid.clone(),
                    }),
                    ..DeleteParams::default()
                };
                match api.delete(lr_name, &params).await {
                    Ok(_) => {}
                    Err(e) if not_found(&e) => {}
                    Err(e) => return Err(api_error(format!("delete {what}"))(e)),
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// An Event about the Namespace (in `default`, where the API server keeps a cluster-scoped
/// object's Events); a failure is logged, never retried: the state is on the Namespace.
pub(crate) async fn event(
    client: &kube::Client,
    options: &Options,
    namespace: &str,
    notice: &Notice,
) {
    let now = Timestamp::now();
    let mut note = notice.message.clone();
    if note.len() > 1024 {
        let mut cut = 1021;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
        note.push_str("...");
    }
    let body = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {
            "name": format!("{namespace}.{:x}", now.as_nanosecond()),
            "namespace": "default",
        },
        "eventTime": MicroTime(now),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": options.instance,
        "action": "Reconcile",
        "reason": notice.reason,
        "note": note,
        "type": if notice.warning { "Warning" } else { "Normal" },
        "regarding": { "apiVersion": "v1", "kind": "Namespace", "name": namespace },
    });
    let event: Event = match serde_json::from_value(body) {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e, "cannot build the Event");
            return;
        }
    };
    if let Err(e) = Api::<Event>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &event)
        .await
    {
        tracing::warn!(namespace, reason = notice.reason, error = %e, "the Event was not created");
    }
}
