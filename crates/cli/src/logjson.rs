//! The daemon's JSON log lines: one object per event, `timestamp`, `level`, the fields of the
//! spans it happens in (`pod` of the `victim` span: Talos's lines about a victim carry the pod
//! beside their own fields), then the event's fields flattened (`message` first, as
//! tracing-subscriber's JSON format writes them; an event's field wins over a span's). Span
//! fields are kept as JSON by [`JsonFields`], which the subscriber must be given. Unlike
//! that format, a field whose value is a list of numbers (Talos's `processes`: the victim's
//! PIDs) is a JSON array, as Talos's zap logger writes it, not a string: tracing-subscriber's
//! own JSON format records a `Debug` field as a string, and structured values need tracing's
//! unstable `valuable` support.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
pub(crate) use tracing_subscriber::fmt::format::JsonFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Fields whose `Debug` value (`[1, 2, 3]`) is written as a JSON array.
const ARRAY_FIELDS: &[&str] = &["processes"];

/// The JSON event format of `oomwarden run --log-format json`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct JsonLines;

#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        let value = if ARRAY_FIELDS.contains(&field.name()) {
            match serde_json::from_str::<Value>(&text) {
                Ok(array @ Value::Array(_)) => array,
                _ => Value::String(text),
            }
        } else {
            Value::String(text)
        };
        self.0.insert(field.name().to_owned(), value);
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            Value::from(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        );
        line.insert(
            "level".into(),
            Value::from(event.metadata().level().as_str()),
        );
        for span in ctx.event_scope().into_iter().flat_map(|s| s.from_root()) {
            let extensions = span.extensions();
            let Some(formatted) = extensions.get::<FormattedFields<N>>() else {
                continue;
            };
            // JsonFields writes `{"pod":"shop/web-1"}`; another formatter's text is left out.
            if let Ok(Value::Object(span_fields)) = serde_json::from_str::<Value>(formatted) {
                line.extend(span_fields);
            }
        }
        line.extend(fields.0);
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomwarden_testkit::LogBuffer;

    #[test]
    fn processes_is_an_array_of_pids() {
        let buffer = LogBuffer::default();
        let out = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(JsonFields::new())
            .event_format(JsonLines)
            .with_writer(move || out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let pids: Vec<u32> = vec![12, 13];
            tracing::info!(processes = ?pids, "victim processes:");
            tracing::error!(pid = 12_u32, error = %"No such process", "failed to open pidfd");
            let victim = tracing::info_span!("victim", pod = %"shop/web-1");
            let _in = victim.enter();
            tracing::warn!(
                cgroup = "/sys/fs/cgroup/kubepods/podx",
                "Sending SIGKILL to cgroup"
            );
        });
        let text = buffer.text();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[0]["processes"], serde_json::json!([12, 13]), "{text}");
        assert_eq!(lines[0]["message"], "victim processes:");
        assert_eq!(lines[0]["level"], "INFO");
        assert_eq!(lines[1]["pid"], 12);
        assert_eq!(lines[1]["error"], "No such process");
        assert!(lines[1].get("pod").is_none(), "{text}");
        // A line inside the victim span carries its pod beside Talos's fields.
        assert_eq!(lines[2]["pod"], "shop/web-1", "{text}");
        assert_eq!(lines[2]["cgroup"], "/sys/fs/cgroup/kubepods/podx");
        assert_eq!(lines[2]["message"], "Sending SIGKILL to cgroup");
        assert!(
            lines[0]["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z'))
        );
    }
}
