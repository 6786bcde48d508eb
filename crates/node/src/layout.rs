//! The layout a node's settings ask for.

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_collect::detect_layout;
use oomwarden_config::{LayoutSetting, Settings};
use oomwarden_model::Layout;

use crate::SetupError;

/// The layout the settings ask for: a built-in one by name, or (`auto`) the one the tree
/// shows, with the reason; an unrecognised or ambiguous tree is an error asking for a layout.
pub fn resolve_layout(
    settings: &Settings,
    cgroups: &CgroupFs,
) -> Result<(Layout, String), SetupError> {
    match &settings.warden.layout {
        LayoutSetting::Auto => {
            detect_layout(cgroups).map_err(|e| SetupError::Layout(e.to_string()))
        }
        LayoutSetting::Builtin(b) => Ok((b.layout(), "set in the configuration".to_owned())),
        LayoutSetting::Custom(layout) => Ok((
            layout.clone(),
            "custom layout written in the configuration".to_owned(),
        )),
    }
}

/// A layout given by hand whose cgroups are not there: said at start (the daemon runs on, as
/// cgroups such as `kubepods` appear when the kubelet starts; `oomwarden layout` refuses such
/// a tree outright).
pub fn warn_missing_dirs(settings: &Settings, layout: &Layout, cgroups: &CgroupFs) {
    if matches!(settings.warden.layout, LayoutSetting::Auto) {
        return;
    }
    let (missing, _) = oomwarden_collect::missing_dirs(layout, cgroups);
    if !missing.is_empty() {
        tracing::warn!(
            layout = %layout.name,
            missing = %missing.join(", "),
            "cgroups of the layout given do not exist (yet); their classes read as empty"
        );
    }
}
