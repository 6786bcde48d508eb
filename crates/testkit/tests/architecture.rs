//! ARCHITECTURE.md's crate table is the rule: a crate that gains a dependency on another of the
//! workspace's crates that the table does not list fails here (issue 15, item 7), as does a
//! table that lists what the code no longer has.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `crate → the workspace crates it may depend on`, from the table (`—` is none, `all of the
/// above` every crate listed before it, `all` every other crate; a parenthesis is a comment).
fn allowed(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut order: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    for line in architecture.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(name) = cells
            .get(1)
            .and_then(|c| c.strip_prefix("`oomwarden"))
            .and_then(|c| c.strip_suffix('`'))
        else {
            continue;
        };
        let name = format!("oomwarden{name}");
        let deps = cells
            .get(cells.len().saturating_sub(3))
            .copied()
            .unwrap_or("");
        order.push(name.clone());
        rows.push((name, deps.to_owned()));
    }
    let all: BTreeSet<String> = order.iter().cloned().collect();
    let mut out = BTreeMap::new();
    for (i, (name, deps)) in rows.iter().enumerate() {
        let set: BTreeSet<String> = match deps.as_str() {
            "—" => BTreeSet::new(),
            "all of the above" => order[..i].iter().cloned().collect(),
            "all" => all.iter().filter(|c| *c != name).cloned().collect(),
            list => list
                .split(',')
                .map(|d| d.split('(').next().unwrap().trim())
                .filter(|d| !d.is_empty())
                .map(|d| format!("oomwarden-{d}"))
                .collect(),
        };
        out.insert(name.clone(), set);
    }
    out
}

/// `crate → the workspace crates it depends on` (normal and build dependencies), from
/// `cargo metadata`.
fn actual(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut map = BTreeMap::new();
    for p in meta["packages"].as_array().unwrap() {
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null() || d["kind"] == "build")
            .filter_map(|d| d["name"].as_str())
            .filter(|n| n.starts_with("oomwarden"))
            .map(str::to_owned)
            .collect();
        map.insert(p["name"].as_str().unwrap().to_owned(), deps);
    }
    map
}

#[test]
fn crate_dependencies_are_the_ones_architecture_md_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let table = allowed(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    let actual = actual(&root);
    let mut wrong = Vec::new();
    for (name, deps) in &actual {
        if name == "oomwarden-testkit" {
            continue; // a dev-dependency of the others, not part of the product
        }
        let Some(allowed) = table.get(name) else {
            wrong.push(format!("{name} is not in ARCHITECTURE.md's crate table"));
            continue;
        };
        for d in deps.difference(allowed) {
            wrong.push(format!(
                "{name} depends on {d}, which ARCHITECTURE.md does not allow"
            ));
        }
    }
    for name in table.keys() {
        if !actual.contains_key(name) {
            wrong.push(format!(
                "ARCHITECTURE.md lists {name}, which the workspace does not have"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_table_parser_reads_the_forms_used() {
    let t = allowed(
        "| `oomwarden-a` | x | — | pure |\n| `oomwarden-b` | x | a (parsers) | pure |\n| `oomwarden-c` | x | all of the above | edge |\n| `oomwarden` | x | all | edge |\n",
    );
    assert!(t["oomwarden-a"].is_empty());
    assert_eq!(t["oomwarden-b"].iter().collect::<Vec<_>>(), ["oomwarden-a"]);
    assert_eq!(t["oomwarden-c"].len(), 2);
    assert_eq!(t["oomwarden"].len(), 3);
}
