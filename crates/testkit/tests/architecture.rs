//! ARCHITECTURE.md's crate table is the rule: a crate that gains a dependency (or, for its
//! tests, a dev-dependency) on another of the workspace's crates that the table does not list
//! fails here (issue 15, item 7; issue 33), as does a table that lists what the code no longer
//! has. Also held here: the forensics commands do not use the daemon crate, and no crate's
//! modules refer to each other in a circle.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `crate → the workspace crates it may depend on`, from the table's column `column` counted
/// from the end (3: "depends on", 2: "tests also use"; `—` is none, `all of the above` every
/// crate listed before it, `all` every other crate; a parenthesis is a comment).
fn allowed_in(architecture: &str, column: usize) -> BTreeMap<String, BTreeSet<String>> {
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
            .get(cells.len().saturating_sub(column + 1))
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

/// The "depends on" column.
fn allowed(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    allowed_in(architecture, 3)
}

/// `crate → the workspace crates it depends on` (normal and build dependencies; with `dev`,
/// the dev-dependencies), from `cargo metadata`.
fn actual_of(root: &Path, dev: bool) -> BTreeMap<String, BTreeSet<String>> {
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
            .filter(|d| {
                if dev {
                    d["kind"] == "dev"
                } else {
                    d["kind"].is_null() || d["kind"] == "build"
                }
            })
            .filter_map(|d| d["name"].as_str())
            .filter(|n| n.starts_with("oomwarden"))
            .map(str::to_owned)
            .collect();
        map.insert(p["name"].as_str().unwrap().to_owned(), deps);
    }
    map
}

fn actual(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    actual_of(root, false)
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn dev_dependencies_are_the_ones_architecture_md_allows() {
    let root = root();
    let table = allowed_in(
        &std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap(),
        2,
    );
    let mut wrong = Vec::new();
    for (name, deps) in &actual_of(&root, true) {
        let allowed = table.get(name).cloned().unwrap_or_default();
        for d in deps.difference(&allowed) {
            wrong.push(format!(
                "{name}'s tests use {d}, which ARCHITECTURE.md's \"tests also use\" does not list"
            ));
        }
        for d in allowed.difference(deps) {
            wrong.push(format!(
                "ARCHITECTURE.md says {name}'s tests use {d}, which they do not"
            ));
        }
    }
    // The test helpers never reach the product.
    for (name, deps) in &actual(&root) {
        for helper in ["oomwarden-testkit", "oomwarden-actuate-fake"] {
            if deps.contains(helper) && name != "oomwarden-actuate-fake" {
                wrong.push(format!("{name} depends on {helper} outside its tests"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The commands that only read a node (issue 33): they use `oomwarden-node`, never the daemon.
#[test]
fn the_forensics_commands_do_not_use_the_daemon() {
    let commands = root().join("crates/cli/src/commands");
    for name in ["top", "layout", "score", "audit", "oomlog", "mod"] {
        let path = commands.join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("oomwarden_daemon"),
            "{} uses oomwarden_daemon",
            path.display()
        );
    }
}

/// A crate's top-level modules and the files of each (a directory module's files included).
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = if path.is_dir() {
            let mut all = String::new();
            let mut stack = vec![path.clone()];
            while let Some(dir) = stack.pop() {
                for e in std::fs::read_dir(&dir).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "rs") {
                        all.push_str(&without_tests(&std::fs::read_to_string(&p).unwrap()));
                    }
                }
            }
            all
        } else if path.extension().is_some_and(|x| x == "rs") {
            without_tests(&std::fs::read_to_string(&path).unwrap())
        } else {
            continue;
        };
        if name != "lib" && name != "main" {
            out.insert(name, text);
        }
    }
    out
}

/// The text before a file's test module (tests may reach anywhere).
fn without_tests(text: &str) -> String {
    text.split("#[cfg(test)]").next().unwrap_or("").to_owned()
}

/// Which of its sibling modules each top-level module names (`crate::x`, `use crate::{x, …}`).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    let names: BTreeSet<&String> = modules.keys().collect();
    let mut graph = BTreeMap::new();
    for (name, text) in &modules {
        let mut refs = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = text.get(i + "crate::".len()..).unwrap_or("");
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                refs.extend(
                    inner
                        .split(',')
                        .map(|w| w.trim().split("::").next().unwrap_or("").to_owned()),
                );
            } else {
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                refs.insert(word);
            }
        }
        refs.retain(|r| r != name && names.contains(r));
        graph.insert(name.clone(), refs);
    }
    graph
}

/// A circle in the graph, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_owned());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

/// No crate's modules refer to each other in a circle (issue 33): each module can be read
/// knowing only those below it.
#[test]
fn no_crate_has_a_module_circle() {
    let crates = root().join("crates");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        if let Some(c) = circle(&module_graph(&src)) {
            found.push(format!("{}: {}", src.display(), c.join(" → ")));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_circle_finder_finds_one() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circle(&g).map(|c| c.len()), Some(4));
    let mut g = g;
    g.insert("c".to_owned(), BTreeSet::new());
    assert_eq!(circle(&g), None);
}

#[test]
fn crate_dependencies_are_the_ones_architecture_md_allows() {
    let root = root();
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
        "| `oomwarden-a` | x | — | — | pure |\n| `oomwarden-b` | x | a (parsers) | — | pure |\n| `oomwarden-c` | x | all of the above | — | edge |\n| `oomwarden` | x | all | — | edge |\n",
    );
    assert!(t["oomwarden-a"].is_empty());
    assert_eq!(t["oomwarden-b"].iter().collect::<Vec<_>>(), ["oomwarden-a"]);
    assert_eq!(t["oomwarden-c"].len(), 2);
    assert_eq!(t["oomwarden"].len(), 3);
    let dev = allowed_in(
        "| `oomwarden-a` | x | — | b, c | pure |\n| `oomwarden-b` | x | a | — | pure |\n",
        2,
    );
    assert_eq!(dev["oomwarden-a"].len(), 2);
    assert!(dev["oomwarden-b"].is_empty());
}
