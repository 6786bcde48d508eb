//! The safety state kept on the Namespace (the state annotation): the last limit applied and,
//! when held, the hold's generation, its target and why.

use serde::{Deserialize, Serialize};

use crate::settings::Amount;

/// The only version written and read.
pub const STATE_VERSION: u32 = 1;

/// The state annotation's JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct State {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// The limit last applied (canonical text), remembered apart from the LimitRange so a
    /// lowered default is held even after the LimitRange is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_limit: Option<String>,
    /// The hold's generation: a new one for each hold and each change of target, so a token
    /// never authorises another hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
    /// The target (canonical) the hold is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Why it is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A hold, read from a valid state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Its generation.
    pub generation: String,
    /// Its target.
    pub target: Amount,
    /// Why.
    pub reason: String,
}

impl Hold {
    /// The acknowledgement token: `<hold>:<target>`.
    pub fn token(&self) -> String {
        format!("{}:{}", self.generation, self.target.text)
    }
}

/// A state that was read and checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Valid {
    /// The last limit applied.
    pub last_limit: Option<Amount>,
    /// The hold, if any.
    pub hold: Option<Hold>,
}

impl Valid {
    /// The annotation's JSON text.
    pub fn to_json(&self) -> String {
        let state = State {
            version: STATE_VERSION,
            last_limit: self.last_limit.as_ref().map(|a| a.text.clone()),
            hold: self.hold.as_ref().map(|h| h.generation.clone()),
            target: self.hold.as_ref().map(|h| h.target.text.clone()),
            reason: self.hold.as_ref().map(|h| h.reason.clone()),
        };
        serde_json::to_string(&state).unwrap_or_default()
    }
}

/// Reads the annotation's text; an error says what is wrong, for the administrator who must
/// repair it.
pub fn parse(text: &str) -> Result<Valid, String> {
    let state: State =
        serde_json::from_str(text).map_err(|e| format!("not the state JSON: {e}"))?;
    if state.version != STATE_VERSION {
        return Err(format!("version {} is not {STATE_VERSION}", state.version));
    }
    let amount = |field: &str, text: &str| Amount::parse(text).map_err(|e| format!("{field}: {e}"));
    let last_limit = state
        .last_limit
        .as_deref()
        .map(|t| amount("lastLimit", t))
        .transpose()?;
    let hold = match (state.hold, state.target, state.reason) {
        (None, None, None) => None,
        (Some(generation), Some(target), reason) => {
            if generation.is_empty() || generation.contains(':') {
                return Err(format!("hold {generation:?}: empty or contains ':'"));
            }
            Some(Hold {
                generation,
                target: amount("target", &target)?,
                reason: reason.unwrap_or_default(),
            })
        }
        _ => return Err("hold and target go together".to_owned()),
    };
    Ok(Valid { last_limit, hold })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_bad_ones_say_why() {
        let v = parse(r#"{"version":1,"lastLimit":"32Gi"}"#).unwrap();
        assert_eq!(v.last_limit.as_ref().unwrap().bytes, 32 << 30);
        assert_eq!(v.to_json(), r#"{"version":1,"lastLimit":"32Gi"}"#);
        let h =
            parse(r#"{"version":1,"lastLimit":"32Gi","hold":"7","target":"16Gi","reason":"r"}"#)
                .unwrap();
        assert_eq!(h.hold.as_ref().unwrap().token(), "7:16Gi");
        assert_eq!(parse(&h.to_json()).unwrap(), h);
        for (bad, why) in [
            ("", "not the state JSON"),
            ("{}", "missing field `version`"),
            (r#"{"version":2}"#, "version 2 is not 1"),
            (r#"{"version":1,"lastLimit":"lots"}"#, "lastLimit"),
            (r#"{"version":1,"hold":"1"}"#, "go together"),
            (
                r#"{"version":1,"hold":"a:b","target":"1Gi"}"#,
                "contains ':'",
            ),
            (r#"{"version":1,"extra":true}"#, "unknown field"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_a_state_or_refused(text in "\\PC{0,80}") {
            let _ = parse(&text);
        }
    }
}
