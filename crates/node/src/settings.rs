//! The configuration file: read (bounded, a regular file only), validated, overridden; and
//! what a reload may take.

use std::path::Path;

use oomwarden_config::{ConfigErrors, Overrides, Settings, oom_keys};

use crate::SetupError;

/// Loads the configuration file (or the defaults) and applies the overrides.
pub fn load_settings(file: Option<&Path>, overrides: &Overrides) -> Result<Settings, SetupError> {
    load_declared(file, overrides).map(|(settings, _)| settings)
}

/// [`load_settings`], and what the file declares itself (from the same read: a reload judges
/// what it loads against what the start read, never against a file changed since).
pub fn load_declared(
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<(Settings, Declared), SetupError> {
    let (result, declared) = match file {
        None => (Settings::defaults(), Declared::default()),
        Some(path) => {
            let text = read_config_file(path)?;
            (
                Settings::from_yaml(&text, &path.display().to_string()),
                Declared::of(&text),
            )
        }
    };
    let mut settings = result.map_err(|e: ConfigErrors| SetupError::Config(e.to_string()))?;
    settings.apply(overrides);
    Ok((settings, declared))
}

/// The largest configuration file read (a custom layout and two documents fit in a few KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The configuration file's text. Only a regular file (or a symlink to one, as a ConfigMap
/// mounts it) is read, checked on the descriptor opened ([`oomwarden_cgroupfs::read_regular`]):
/// a FIFO would block the daemon, a device could stream forever.
fn read_config_file(path: &Path) -> Result<String, SetupError> {
    let cannot = |e: &dyn std::fmt::Display| {
        SetupError::Config(format!("cannot read {}: {e}", path.display()))
    };
    let bytes = oomwarden_cgroupfs::read_regular(path, MAX_CONFIG_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::InvalidData {
            cannot(&format!(
                "{e}: a configuration is at most {} MiB",
                MAX_CONFIG_BYTES >> 20
            ))
        } else {
            cannot(&e)
        }
    })?;
    String::from_utf8(bytes).map_err(|_| cannot(&"not UTF-8 text"))
}

/// A reload's settings: as at start, but an empty (or whitespace-only) file is refused,
/// because on a running node that is a truncated or half-written file, not a wish for the
/// embedded defaults (which would, for one, turn a `dryRun: true` off).
/// Also says what the file declares itself (see [`Declared`]).
pub fn load_for_reload(
    file: Option<&Path>,
    overrides: &Overrides,
) -> Result<(Settings, Declared), SetupError> {
    let Some(path) = file else {
        return load_declared(None, overrides);
    };
    let text = read_config_file(path)?;
    if text.trim().is_empty() {
        return Err(SetupError::Config(format!(
            "{} is empty; a reload refuses an empty file (at start it means the defaults)",
            path.display()
        )));
    }
    let mut settings = Settings::from_yaml(&text, &path.display().to_string())
        .map_err(|e: ConfigErrors| SetupError::Config(e.to_string()))?;
    settings.apply(overrides);
    Ok((settings, Declared::of(&text)))
}

/// What a configuration file says itself, beyond the settings it comes to: which of its two
/// documents it has, and which of the keys a reload may not lose in silence each writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// The file has an `OOMWardenConfig` document.
    pub warden_document: bool,
    /// That document writes `dryRun`.
    pub dry_run: bool,
    /// The file has an `OOMConfig` document.
    pub oom_document: bool,
    /// That document has nothing but its `apiVersion` and `kind`: Talos's defaults, asked for.
    pub oom_bare: bool,
    /// That document writes `triggerExpression` (an empty value asks for the default).
    pub trigger: bool,
    /// That document writes `cgroupRankingExpression`.
    pub ranking: bool,
}

impl Declared {
    /// What `text` declares.
    pub fn of(text: &str) -> Self {
        let oom = oom_keys(text);
        let writes = |key: &str| oom.as_ref().is_some_and(|k| k.iter().any(|k| k == key));
        Declared {
            warden_document: oomwarden_config::declares_warden_document(text),
            dry_run: oomwarden_config::warden_sets(text, "dryRun"),
            oom_document: oom.is_some(),
            oom_bare: oom
                .as_ref()
                .is_some_and(|k| k.iter().all(|k| k == "apiVersion" || k == "kind")),
            trigger: writes("triggerExpression"),
            ranking: writes("cgroupRankingExpression"),
        }
    }
}

/// Why a reload that loads would lower safety without the file saying so: a file cut at a
/// document boundary lost a document (the `OOMWardenConfig` with a `dryRun: true`, or the
/// `OOMConfig` with the trigger and ranking that exempt pods), or a document lost its
/// `triggerExpression` or `cgroupRankingExpression` (both would fall back to Talos's
/// defaults), or a `dryRun: true` in force would become false by default. Found by the fault
/// suite: a file truncated to its first document turned dry runs into kills, and one that lost
/// its ranking made an exempted pod the victim. A loss the file asks for is taken: the bare
/// document (only `apiVersion` and `kind`) asks for the defaults, and a key kept with an empty
/// value asks for its default.
pub fn unsafe_reload(
    running: &Settings,
    running_declared: Declared,
    new: &Settings,
    declared: Declared,
) -> Option<String> {
    if running_declared.warden_document && !declared.warden_document {
        return Some(
            "the OOMWardenConfig document the running configuration has is gone from the file (a file cut short?); to go back to oomwarden's defaults, keep the document with only its apiVersion and kind"
                .to_owned(),
        );
    }
    if running_declared.oom_document && !declared.oom_document {
        return Some(
            "the OOMConfig document the running configuration has is gone from the file (a file cut short?); to go back to Talos's default trigger and ranking, keep the document with only its apiVersion and kind"
                .to_owned(),
        );
    }
    for (key, was, is) in [
        (
            "triggerExpression",
            running_declared.trigger,
            declared.trigger,
        ),
        (
            "cgroupRankingExpression",
            running_declared.ranking,
            declared.ranking,
        ),
    ] {
        if was && !is && !declared.oom_bare {
            return Some(format!(
                "the OOMConfig document lost its {key} (a file cut short?): it would fall back to Talos's default; to ask for the default, write `{key}: \"\"` (or keep the document with only its apiVersion and kind)"
            ));
        }
    }
    if running.warden.dry_run && !new.warden.dry_run && !declared.dry_run {
        return Some(
            "dryRun would change from true to false without the file saying so; write `dryRun: false` in the OOMWardenConfig document to start killing"
                .to_owned(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 14: a truncated file on reload used to mean the embedded defaults (turning a
    // `dryRun: true` off); a FIFO used to block the daemon.
    #[test]
    fn a_reload_refuses_an_empty_file_but_a_start_takes_it_as_the_defaults() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("oom.yaml");
        for text in ["", "  \n\t\n"] {
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
            let err = load_for_reload(Some(&path), &Overrides::default())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("is empty; a reload refuses an empty file"),
                "{err}"
            );
            assert!(load_settings(Some(&path), &Overrides::default()).is_ok());
        }
        std::fs::write(
            &path,
            "apiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ndryRun: true\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let loaded = load_for_reload(Some(&path), &Overrides::default()).ok();
        assert!(loaded.is_some_and(|(s, d)| s.warden.dry_run && d.warden_document && d.dry_run));
    }

    // Issue 32: a file cut at a document boundary (the OOMWardenConfig with `dryRun: true`
    // gone) was accepted with a warning and turned dry runs into kills.
    #[test]
    fn a_reload_cannot_turn_safety_off_without_the_file_saying_so() {
        let load = |text: &str| {
            let s = Settings::from_yaml(text, "oom.yaml").unwrap();
            (s, Declared::of(text))
        };
        let oom = "apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: \"false\"\n";
        let warden = "---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\n";
        let (running, declared) = load(&format!("{oom}{warden}dryRun: true\n"));
        assert!(running.warden.dry_run);
        // Cut after the first document.
        let (new, d) = load(oom);
        let why = unsafe_reload(&running, declared, &new, d).unwrap_or_default();
        assert!(why.contains("OOMWardenConfig document"), "{why}");
        // The document kept, dryRun left out: the default (false) is not taken.
        let (new, d) = load(&format!("{oom}{warden}killTimeout: 2s\n"));
        let why = unsafe_reload(&running, declared, &new, d).unwrap_or_default();
        assert!(why.contains("write `dryRun: false`"), "{why}");
        // Said explicitly: taken.
        let (new, d) = load(&format!("{oom}{warden}dryRun: false\n"));
        assert_eq!(unsafe_reload(&running, declared, &new, d), None);
        // Without a document at the start, a file without one is no loss.
        let (running, declared) = load(oom);
        let (new, d) = load(oom);
        assert_eq!(unsafe_reload(&running, declared, &new, d), None);
        // The bare document (apiVersion and kind only) is how the defaults are asked for.
        let (running, declared) = load(&format!("{oom}{warden}killTimeout: 2s\n"));
        let (new, d) = load(&format!("{oom}{warden}"));
        assert_eq!(unsafe_reload(&running, declared, &new, d), None);
    }

    // Issue 54 (2): a file that lost its OOMConfig document, or that document its trigger or
    // ranking, fell back to Talos's defaults at a reload, and an exempted pod became the
    // victim.
    #[test]
    fn a_reload_cannot_lose_the_trigger_or_the_ranking_in_silence() {
        let load = |text: &str| {
            let s = Settings::from_yaml(text, "oom.yaml").unwrap();
            (s, Declared::of(text))
        };
        let head = "apiVersion: v1alpha1\nkind: OOMConfig\n";
        let trigger = "triggerExpression: \"true\"\n";
        let ranking = "cgroupRankingExpression: 'path.contains(\"etcd\") ? 0.0 : 1.0'\n";
        let warden =
            "---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\nkillTimeout: 2s\n";
        let (running, declared) = load(&format!("{head}{trigger}{ranking}{warden}"));
        let refused = |text: &str, needle: &str| {
            let (new, d) = load(text);
            let why = unsafe_reload(&running, declared, &new, d).unwrap_or_default();
            assert!(why.contains(needle), "{text:?}: {why:?}");
        };
        // The OOMConfig document cut away (the file's second half kept).
        refused(
            warden.trim_start_matches("---\n"),
            "OOMConfig document the running",
        );
        // The ranking or the trigger lost, the document kept.
        refused(
            &format!("{head}{trigger}{warden}"),
            "lost its cgroupRankingExpression",
        );
        refused(
            &format!("{head}{ranking}{warden}"),
            "lost its triggerExpression",
        );
        let taken = |text: &str| {
            let (new, d) = load(text);
            assert_eq!(unsafe_reload(&running, declared, &new, d), None, "{text:?}");
        };
        // Asked for: the key kept empty, or the bare document; or any new expression.
        taken(&format!(
            "{head}{trigger}cgroupRankingExpression: \"\"\n{warden}"
        ));
        taken(&format!("{head}{warden}"));
        taken(&format!(
            "{head}{trigger}cgroupRankingExpression: \"2.0\"\n{warden}"
        ));
        // A file that never had them loses nothing.
        let (running, declared) = load(warden.trim_start_matches("---\n"));
        let (new, d) = load(warden.trim_start_matches("---\n"));
        assert_eq!(unsafe_reload(&running, declared, &new, d), None);
        let (new, d) = load(&format!("{head}{warden}"));
        assert_eq!(unsafe_reload(&running, declared, &new, d), None);
    }

    #[test]
    fn only_a_regular_file_is_read_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let big = dir.path().join("big.yaml");
        std::fs::write(&big, vec![b'#'; 2 << 20]).unwrap_or_else(|e| panic!("{e}"));
        let err = load_settings(Some(&big), &Overrides::default())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("a configuration is at most 1 MiB"), "{err}");
        for path in [fifo.as_path(), dir.path(), Path::new("/dev/zero")] {
            let err = load_settings(Some(path), &Overrides::default())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("not a regular file"),
                "{}: {err}",
                path.display()
            );
        }
    }
}
