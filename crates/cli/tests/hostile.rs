//! Issue 54 (6): every string from outside (a cgroup's name, a pod's name or namespace, a
//! command line, a process name in the kernel log, a record's field, a label) is escaped in
//! every output. Each command of the binary is run on inputs whose names carry a newline
//! followed by a forged line, and none of its output lines may start with that forged line.
//! The list of commands is read from `oomwarden --help`, so a new command without a case here
//! fails this test instead of being forgotten.

// Test code: failing to run the binary or write a fixture is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oomwarden_testkit::{copy_dir, talos_fixture, write};

/// What a raw newline in a name would start a line with.
const FORGED: &str = "FORGED-LINE";
/// A name from outside: a newline, a forged line, a tab and an escape sequence.
const HOSTILE: &str = "web\nFORGED-LINE fake row\t\u{1b}[2J";

/// A pod UID whose cgroup, pod-log directory and records carry hostile names.
const UID: &str = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn oomwarden() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oomwarden"));
    c.current_dir(root());
    c
}

/// Runs a command; its exit code, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = oomwarden()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Nothing forged: no line starts with the forged text, and no control character but newline
/// and tab reaches the terminal.
fn assert_clean(what: &str, text: &str) {
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with(FORGED),
            "{what}: a forged line: {line:?}\n{text}"
        );
    }
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what}: a control character: {text:?}"
    );
}

/// The hostile node: Talos's pressures, a BestEffort pod whose cgroup name, container, command
/// line and pod-log directory are hostile, a top-level cgroup with a hostile name, and a
/// process the doctor looks at whose command line is hostile.
struct Node {
    cg: tempfile::TempDir,
    proc: tempfile::TempDir,
    host: tempfile::TempDir,
    logs: tempfile::TempDir,
    state: tempfile::TempDir,
}

fn node() -> Node {
    let cg = tempfile::tempdir().unwrap();
    copy_dir(&talos_fixture("trigger-true"), cg.path());
    write(
        cg.path(),
        "cgroup.controllers",
        "cpuset cpu io memory pids\n",
    );
    let pod = format!("kubepods/besteffort/pod{UID}");
    let container = "c".repeat(64);
    write(
        cg.path(),
        &format!("{pod}/cgroup.events"),
        "populated 1\nfrozen 0\n",
    );
    write(cg.path(), &format!("{pod}/memory.current"), "999999999\n");
    write(cg.path(), &format!("{pod}/memory.max"), "max\n");
    write(
        cg.path(),
        &format!("{pod}/{container}/cgroup.procs"),
        "132\n",
    );
    write(
        cg.path(),
        &format!("{pod}/{container}/memory.current"),
        "999999999\n",
    );
    // A pod cgroup whose very name is hostile, and a top-level one.
    write(
        cg.path(),
        &format!("kubepods/besteffort/pod{HOSTILE}/memory.current"),
        "5\n",
    );
    write(cg.path(), &format!("{HOSTILE}/memory.current"), "7\n");
    let proc = tempfile::tempdir().unwrap();
    write(proc.path(), "132/cmdline", &format!("nginx\0{HOSTILE}\0"));
    write(proc.path(), "132/comm", "kubelet\n");
    write(
        proc.path(),
        "132/cgroup",
        &format!("0::/{pod}/{container}\n"),
    );
    write(proc.path(), "132/oom_score_adj", "0\n");
    // Another OOM killer, whose command line the doctor shows.
    write(proc.path(), "133/comm", "earlyoom\n");
    write(
        proc.path(),
        "133/cmdline",
        &format!("earlyoom\0{HOSTILE}\0"),
    );
    write(proc.path(), "133/cgroup", &format!("0::/{HOSTILE}\n"));
    write(proc.path(), "133/oom_score_adj", "0\n");
    write(
        proc.path(),
        "meminfo",
        "MemTotal: 8000000 kB\nMemFree: 100000 kB\nMemAvailable: 200000 kB\n",
    );
    let host = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(logs.path().join(format!("shop_{HOSTILE}_{UID}/{HOSTILE}"))).unwrap();
    let state = tempfile::tempdir().unwrap();
    Node {
        cg,
        proc,
        host,
        logs,
        state,
    }
}

impl Node {
    fn cg(&self) -> &str {
        self.cg.path().to_str().unwrap()
    }

    fn proc(&self) -> &str {
        self.proc.path().to_str().unwrap()
    }

    fn state(&self) -> &str {
        self.state.path().to_str().unwrap()
    }

    /// A configuration naming the pods from the pod-log directories (no runtime), deciding
    /// every cycle in a dry run, keeping a usage history.
    fn config(&self) -> String {
        let path = self.state.path().join("oom.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: memory_full_avg10 > 12.0\nsampleInterval: 200ms\n---\napiVersion: oomwarden/v1alpha1\nkind: OOMWardenConfig\ndryRun: true\nstateDir: {}\ncontainerRuntime:\n  endpoint: none\n  podLogs: {}\nusageHistory:\n  interval: 1s\n",
                self.state(),
                self.logs.path().display()
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_owned()
    }
}

/// A JSON string's escaped form, to put a hostile name into a file as JSON.
fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The commands `oomwarden --help` lists.
fn commands() -> Vec<String> {
    let (_, out, _) = run(&["--help"]);
    out.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Commands that read nothing from outside: what they print is the binary's own.
const NOTHING_FROM_OUTSIDE: &[&str] = &["completions", "man", "help"];

/// Writes the files from outside, with hostile names, into `dir`: `pods.json`,
/// `cluster.json`, `kernel.log`, `context.json`, `config.yaml`, and `history/actions.jsonl`.
fn write_inputs(dir: &Path) {
    let d = |name: &str| dir.join(name).to_str().unwrap().to_owned();

    // Files from outside with hostile names.
    let pods = std::fs::read_to_string(root().join("testdata/rightsize/pods.json"))
        .unwrap()
        .replace("\"steady-7d9f8\"", &json(HOSTILE))
        .replace("\"shop\"", &json(&format!("shop{HOSTILE}")));
    std::fs::write(d("pods.json"), &pods).unwrap();
    let dump = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":{ns},\"labels\":{{\"kubernetes.io/metadata.name\":{ns}}}}}}},{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"kube-system\"}}}},{{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{{\"name\":{ns},\"namespace\":\"kube-system\"}},\"spec\":{{\"template\":{{\"spec\":{{\"containers\":[{{\"name\":{ns},\"resources\":{{\"requests\":{{\"memory\":\"9Gi\"}}}}}}]}}}}}}}}]}}",
        ns = json(HOSTILE)
    );
    std::fs::write(d("cluster.json"), &dump).unwrap();
    let record = serde_json::json!({
        "id": 0, "time": "2026-12-03T00:00:00.000Z", "monotonicNs": 1, "kind": "oomwarden",
        "outcome": "killed", "victim": format!("/sys/fs/cgroup/kubepods/besteffort/pod{HOSTILE}"),
        "class": "Besteffort", "podUID": UID, "namespace": HOSTILE, "podName": HOSTILE,
        "containerNames": [HOSTILE], "containers": [HOSTILE], "processes": [HOSTILE],
        "score": 1.0, "pids": [1], "triggerContext": "", "error": HOSTILE, "stage": HOSTILE,
        "workload": {"namespace": HOSTILE, "kind": "Pod", "name": HOSTILE},
        "triggerExpression": "true", "rankingExpression": "1.0",
        "runnersUp": [{"cgroup": HOSTILE, "class": "Burstable", "score": 0.5, "namespace": HOSTILE, "podName": HOSTILE}]
    });
    std::fs::create_dir_all(dir.join("history")).unwrap();
    std::fs::write(dir.join("history/actions.jsonl"), format!("{record}\n")).unwrap();
    // A kernel OOM report whose process name and cgroups carry escapes the kernel writes.
    std::fs::write(
        d("kernel.log"),
        "[ 100.000000] web\\x0aFORGED-LINE invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n[ 100.000100] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/pod\\x0aFORGED-LINE,task_memcg=/kubepods/pod\\x0aFORGED-LINE,task=web\\x0aFORGED-LINE,pid=132,uid=0\n[ 100.000200] Memory cgroup out of memory: Killed process 132 (web\\x0aFORGED-LINE) total-vm:100kB, anon-rss:50kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n",
    )
    .unwrap();
    std::fs::write(d("context.json"), format!("{{{}: 1}}", json(HOSTILE))).unwrap();
    std::fs::write(
        d("config.yaml"),
        format!(
            "apiVersion: v1alpha1\nkind: OOMConfig\n{}: 1\n",
            json(HOSTILE)
        ),
    )
    .unwrap();
}

/// The daemon on the hostile node, for `status` and the history and usage it keeps: its log,
/// `status` and `actions` are checked while it runs.
fn run_the_daemon(n: &Node, config: &str) {
    let daemon = oomwarden()
        .args(["run", "--log-format", "human", "--config", config])
        .args(["--cgroup-root", n.cg(), "--proc-root", n.proc()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let socket = n.state.path().join("oomwarden.sock");
    let end = Instant::now() + Duration::from_secs(30);
    while !socket.exists() || !n.state.path().join("actions.jsonl").exists() {
        assert!(Instant::now() < end, "the daemon never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Two usage readings.
    std::thread::sleep(Duration::from_millis(2500));
    let (_, status_out, status_err) = run(&["status", "--state-dir", n.state()]);
    let (_, actions_out, actions_err) = run(&["actions", "--state-dir", n.state(), "-o", "wide"]);
    let pid = rustix::process::Pid::from_raw(i32::try_from(daemon.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let out = daemon.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean("run (its log)", &String::from_utf8_lossy(&out.stderr));
    assert_clean("status", &format!("{status_out}{status_err}"));
    assert_clean(
        "actions (from the daemon)",
        &format!("{actions_out}{actions_err}"),
    );
    assert!(
        std::fs::read_to_string(n.state.path().join("actions.jsonl"))
            .unwrap()
            .contains("FORGED-LINE"),
        "the daemon's records carry the hostile pod name"
    );
}

/// Each command with hostile inputs (the files of [`write_inputs`] in `dir`, the node `n`):
/// its name and its arguments, written as one line (no path here holds a space).
fn cases(n: &Node, config: &str, dir: &Path) -> Vec<(&'static str, Vec<String>)> {
    let d = |name: &str| dir.join(name).display().to_string();
    let (cg, proc, state) = (n.cg(), n.proc(), n.state());
    let (pods, history, rec) = (d("pods.json"), d("history"), d("node.rec"));
    let host = n.host.path().display().to_string();
    let node = format!("--cgroup-root {cg} --proc-root {proc}");
    [
        ("run", String::new()),
        ("status", String::new()),
        (
            "record",
            format!(
                "record --out {rec} --cycles 3 --config {config} {node} --sample-interval 100ms"
            ),
        ),
        ("replay", format!("replay {rec} --config {config}")),
        ("check", format!("check {}", d("config.yaml"))),
        (
            "eval",
            format!("eval trigger true --context {}", d("context.json")),
        ),
        ("layout", format!("layout {node} --layout talos")),
        ("layout", format!("layout {node} -o wide --config {config}")),
        ("doctor", format!("doctor {node} --host-root {host}")),
        ("oomlog", format!("oomlog {}", d("kernel.log"))),
        ("score", format!("score {pods}")),
        ("audit", format!("audit {pods} {}", d("cluster.json"))),
        (
            "top",
            format!("top {node} --containers --pods {pods} --layout talos"),
        ),
        (
            "rightsize",
            format!("rightsize --state-dir {state} --pods {pods}"),
        ),
        (
            "rightsize",
            format!("rightsize --state-dir {state} -o wide"),
        ),
        (
            "limits",
            format!("limits plan --now 1800000000 --from {}", d("cluster.json")),
        ),
        ("actions", format!("actions --state-dir {history} -o wide")),
        ("explain", format!("explain 0 --state-dir {history}")),
    ]
    .into_iter()
    .map(|(name, line)| (name, line.split_whitespace().map(str::to_owned).collect()))
    .collect()
}

#[test]
fn no_command_prints_a_name_from_outside_raw() {
    let n = node();
    let config = n.config();
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    run_the_daemon(&n, &config);
    let cases = cases(&n, &config, dir.path());
    // Every command has a case (or reads nothing from outside).
    let covered: Vec<&str> = cases.iter().map(|(c, _)| *c).collect();
    for command in commands() {
        assert!(
            covered.contains(&command.as_str()) || NOTHING_FROM_OUTSIDE.contains(&command.as_str()),
            "`oomwarden {command}` has no case in this test: give it hostile input here"
        );
    }
    for (command, args) in cases.iter().filter(|(_, a)| !a.is_empty()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out, err) = run(&args);
        assert!(code >= 0, "{command}: killed by a signal");
        assert_clean(command, &format!("{out}{err}"));
        // `record` prints only what it was given (paths); the rest name what they read.
        if *command != "record" {
            assert!(
                out.contains("FORGED") || err.contains("FORGED"),
                "{command}: the hostile name is not in its output at all, so this case tests nothing ({code}):\n{out}{err}"
            );
        }
    }
}
