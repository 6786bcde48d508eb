//! The commit the binary is built from, for `oomwarden --version` and `oomwarden_build_info`:
//! `$OOMWARDEN_COMMIT` when set (a build from an archive, or in a container without `.git`),
//! else what `git` says of the checkout, else `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=OOMWARDEN_COMMIT");
    let commit = std::env::var("OOMWARDEN_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=OOMWARDEN_COMMIT={commit}");
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn from_git() -> Option<String> {
    let dir = git(&["rev-parse", "--absolute-git-dir"])?;
    // Built again when HEAD moves (a commit, a checkout); only files that exist, since cargo
    // reruns a build script every time for a missing one.
    let mut watch = vec![format!("{dir}/HEAD"), format!("{dir}/packed-refs")];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(format!("{dir}/{r}"));
    }
    for path in watch.iter().filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}
