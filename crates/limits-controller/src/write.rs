//! The writes of a decision, in a safe order: the Namespace first (one JSON merge patch that
//! carries the resource version the decision read, so an acknowledgement is consumed once and
//! a Namespace changed meanwhile is decided again), then the LimitRanges, each read again first
//! so one that is not the controller's is never replaced or deleted.

use k8s_openapi::api::core::v1::{LimitRange, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use oomwarden_limits::{Decision, Label, Notice, Write, desired_limits};
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

/// Performs `decision`'s writes in `namespace` (as the decision read it).
pub(crate) async fn perform(
    client: &kube::Client,
    options: &Options,
    namespace: &Namespace,
    decision: &Decision,
) -> Result<(), Error> {
    patch_namespace(client, namespace, decision).await?;
    let name = decision.namespace.as_str();
    let api = Api::<LimitRange>::namespaced(client.clone(), name);
    let managed = &options.settings.names.managed_by;
    for w in &decision.writes {
        match w {
            Write::PutLimitRange {
                name: lr_name,
                limit,
                request,
            } => put_limit_range(&api, name, lr_name, managed, limit, request).await?,
            Write::DeleteLimitRange { name: lr_name } => {
                delete_limit_range(&api, name, lr_name, managed).await?;
            }
            Write::SetLabel { .. }
            | Write::RemoveLabel { .. }
            | Write::SetState { .. }
            | Write::RemoveAck { .. } => {}
        }
    }
    Ok(())
}

/// The label and annotation writes as one JSON merge patch carrying the resource version the
/// decision read: a Namespace changed since (an acknowledgement written or taken back) is a
/// conflict, and decided again.
async fn patch_namespace(
    client: &kube::Client,
    namespace: &Namespace,
    decision: &Decision,
) -> Result<(), Error> {
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
    if labels.is_empty() && annotations.is_empty() {
        return Ok(());
    }
    let name = decision.namespace.as_str();
    let patch = json!({ "metadata": {
        "resourceVersion": namespace.metadata.resource_version,
        "labels": labels,
        "annotations": annotations,
    }});
    Api::<Namespace>::all(client.clone())
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(api_error(format!("patch Namespace {name}")))?;
    Ok(())
}

/// Whether `lr` carries the ownership label.
fn owned(lr: &LimitRange, managed: &Label) -> bool {
    lr.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(&managed.key))
        .is_some_and(|v| *v == managed.value)
}

/// The LimitRange as it is now, `None` when there is none.
async fn current(
    api: &Api<LimitRange>,
    what: &str,
    name: &str,
) -> Result<Option<LimitRange>, Error> {
    match api.get(name).await {
        Ok(lr) => Ok(Some(lr)),
        Err(e) if not_found(&e) => Ok(None),
        Err(e) => Err(api_error(format!("get {what}"))(e)),
    }
}

/// Creates the LimitRange, or replaces the controller's own (read again first: one made since
/// the decision's read that is not the controller's is left alone).
async fn put_limit_range(
    api: &Api<LimitRange>,
    namespace: &str,
    name: &str,
    managed: &Label,
    limit: &str,
    request: &str,
) -> Result<(), Error> {
    let what = format!("LimitRange {namespace}/{name}");
    let now = current(api, &what, name).await?;
    let amount = |t: &str| oomwarden_limits::Amount::parse(t).map_err(Error::Object);
    let body = json!({
        "apiVersion": "v1", "kind": "LimitRange",
        "metadata": {
            "name": name, "namespace": namespace,
            "labels": { managed.key.clone(): managed.value },
            "resourceVersion": now.as_ref().and_then(|c| c.metadata.resource_version.clone()),
        },
        "spec": { "limits": desired_limits(&amount(limit)?, &amount(request)?) },
    });
    let object: LimitRange =
        serde_json::from_value(body).map_err(|e| Error::Object(e.to_string()))?;
    match now {
        None => {
            api.create(&PostParams::default(), &object)
                .await
                .map_err(api_error(format!("create {what}")))?;
        }
        Some(c) if owned(&c, managed) => {
            api.replace(name, &PostParams::default(), &object)
                .await
                .map_err(api_error(format!("replace {what}")))?;
        }
        Some(_) => {
            tracing::warn!(namespace, limit_range = %name, "not replaced: it is not the controller's");
        }
    }
    Ok(())
}

/// Deletes the controller's LimitRange (read again first; the delete carries its resource
/// version and UID as preconditions, so one replaced meanwhile is not deleted).
async fn delete_limit_range(
    api: &Api<LimitRange>,
    namespace: &str,
    name: &str,
    managed: &Label,
) -> Result<(), Error> {
    let what = format!("LimitRange {namespace}/{name}");
    let Some(now) = current(api, &what, name).await? else {
        return Ok(());
    };
    if !owned(&now, managed) {
        return Ok(());
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            resource_version: now.metadata.resource_version.clone(),
            uid: now.metadata.uid.clone(),
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(e) if not_found(&e) => Ok(()),
        Err(e) => Err(api_error(format!("delete {what}"))(e)),
    }
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
