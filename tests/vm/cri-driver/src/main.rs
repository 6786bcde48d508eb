//! `cri-driver`: a test helper for the VM scenarios. It makes pods through a real container
//! runtime's CRI the way the kubelet does, so that oomwarden meets containerd and runc as a
//! node runs them: the pod cgroup first (the kubelet's pod container manager, cgroupfs
//! driver, `memory.max` for a limited pod), then `RunPodSandbox` with the kubelet's
//! `io.kubernetes.pod.*` labels and `cgroup_parent`, then `CreateContainer` and
//! `StartContainer` with the container's `oom_score_adj`. `kubelet` keeps the pod as the kubelet
//! does for a Deployment's pod: a container that exits is started again (attempt + 1) in the
//! same sandbox, a sandbox that dies is stopped, removed and made again with its containers.
//! Every step is said on stdout as a JSON line for the scenario to count.
//!
//! `daemonset` runs the pod of the DaemonSet in a manifest file (S19: oomwarden's own
//! `deploy/kubernetes/oomwarden.yaml`), read field by field (`daemonset.rs`);
//! `configmap-update` replaces a ConfigMap volume's files as the kubelet does.
//!
//! Not the kubelet: no back-off (a container is restarted at once), no API server, no CNI
//! (pods use the node's network namespace), the cgroupfs layout only.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use oomwarden_cri::Runtime;
use oomwarden_cri::v1;

mod daemonset;

/// The kubelet's pod labels (pkg/kubelet/types/labels.go).
const POD_NAME: &str = "io.kubernetes.pod.name";
const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
const POD_UID: &str = "io.kubernetes.pod.uid";
const CONTAINER_NAME: &str = "io.kubernetes.container.name";

#[derive(Debug, Parser)]
#[command(
    name = "cri-driver",
    about = "Makes pods through the CRI as the kubelet does (test helper)"
)]
struct Cli {
    /// The runtime's CRI socket.
    #[arg(long, default_value = oomwarden_cri::CONTAINERD_SOCKET)]
    socket: PathBuf,
    /// The cgroup v2 mount.
    #[arg(long, default_value = "/sys/fs/cgroup")]
    cgroup_root: PathBuf,
    /// The kubelet's pod-log directory.
    #[arg(long, default_value = "/var/log/pods")]
    pod_logs: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Makes the pod, says so, and returns.
    Run(PodArgs),
    /// Makes the pod and keeps it as the kubelet would until SIGTERM or SIGINT, then deletes it.
    Kubelet(PodArgs),
    /// Deletes a pod: containers and sandboxes stopped and removed, pod cgroup and logs removed.
    Delete {
        /// The pod's UID.
        #[arg(long)]
        uid: String,
        /// Seconds between SIGTERM and SIGKILL for each container, as the kubelet gives a
        /// pod its `terminationGracePeriodSeconds` (0: killed at once).
        #[arg(long, default_value_t = 0)]
        grace: i64,
    },
    /// Prints every sandbox and container the runtime knows, one JSON object per line.
    Ps,
    /// Runs the pod of the DaemonSet in a manifest file as the kubelet would on this node:
    /// every field of its pod template translated (an unknown one is an error), its
    /// ConfigMap volumes written as the kubelet writes them.
    Daemonset {
        /// The manifest (a multi-document YAML file with the DaemonSet and its ConfigMaps).
        #[arg(long)]
        manifest: PathBuf,
        /// The pod's UID.
        #[arg(long)]
        uid: String,
        /// `spec.nodeName` (default: the host name).
        #[arg(long)]
        node_name: Option<String>,
        /// Where the kubelet keeps the pods' volumes.
        #[arg(long, default_value = "/var/lib/kubelet/pods")]
        kubelet_pods: PathBuf,
        /// A ConfigMap key as edited in the cluster since the manifest was applied,
        /// `CONFIGMAP/KEY=PATH` (repeatable): the pod gets that file instead.
        #[arg(long = "configmap")]
        configmaps: Vec<String>,
    },
    /// Replaces the files of a pod's ConfigMap volume as the kubelet does on an update: a new
    /// timestamped directory, the `..data` symlink swapped by a rename, the old one removed.
    ConfigmapUpdate {
        /// The pod's UID.
        #[arg(long)]
        uid: String,
        /// The volume's name.
        #[arg(long)]
        volume: String,
        /// A key and the file with its new content, KEY=PATH (repeatable).
        #[arg(long = "file", required = true)]
        files: Vec<String>,
        /// Where the kubelet keeps the pods' volumes.
        #[arg(long, default_value = "/var/lib/kubelet/pods")]
        kubelet_pods: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Qos {
    Besteffort,
    Burstable,
    Guaranteed,
}

#[derive(Debug, Clone, Args)]
struct PodArgs {
    #[arg(long)]
    namespace: String,
    #[arg(long)]
    name: String,
    #[arg(long)]
    uid: String,
    #[arg(long, value_enum, default_value = "besteffort")]
    qos: Qos,
    /// The pod cgroup's memory.max (bytes), as the kubelet sets it for a pod with limits.
    #[arg(long)]
    memory_max: Option<u64>,
    /// Every container's memory limit (bytes): its cgroup's memory.max, set by the runtime.
    #[arg(long)]
    container_memory_max: Option<u64>,
    /// Every container's oom_score_adj (default: the kubelet's for the QoS class: 1000
    /// BestEffort, -997 Guaranteed, 500 Burstable).
    #[arg(long, allow_hyphen_values = true)]
    oom_score_adj: Option<i64>,
    /// A pod label, KEY=VALUE (repeatable).
    #[arg(long = "label")]
    labels: Vec<String>,
    /// A container, `NAME=IMAGE [ARG...]` (words split on spaces; repeatable).
    #[arg(long = "container", required = true)]
    containers: Vec<String>,
}

/// One container of the pod spec.
#[derive(Debug, Clone)]
struct ContainerSpec {
    name: String,
    image: String,
    args: Vec<String>,
}

impl PodArgs {
    fn container_specs(&self) -> Result<Vec<ContainerSpec>> {
        self.containers
            .iter()
            .map(|c| {
                let (name, rest) = c
                    .split_once('=')
                    .with_context(|| format!("--container {c:?}: expected NAME=IMAGE [ARG...]"))?;
                let mut words = rest.split_whitespace().map(str::to_owned);
                let image = words
                    .next()
                    .with_context(|| format!("--container {c:?}: no image"))?;
                Ok(ContainerSpec {
                    name: name.to_owned(),
                    image,
                    args: words.collect(),
                })
            })
            .collect()
    }

    fn oom_score_adj(&self) -> i64 {
        self.oom_score_adj.unwrap_or(match self.qos {
            Qos::Besteffort => 1000,
            Qos::Guaranteed => -997,
            Qos::Burstable => 500,
        })
    }

    /// The pod cgroup, relative to the cgroup mount (cgroupfs driver).
    fn cgroup(&self) -> String {
        match self.qos {
            Qos::Guaranteed => format!("kubepods/pod{}", self.uid),
            Qos::Besteffort => format!("kubepods/besteffort/pod{}", self.uid),
            Qos::Burstable => format!("kubepods/burstable/pod{}", self.uid),
        }
    }

    fn log_dir(&self, pod_logs: &Path) -> PathBuf {
        pod_logs.join(format!("{}_{}_{}", self.namespace, self.name, self.uid))
    }
}

/// What the kubelet sets on every container on cgroup v2 (unless `singleProcessOOMKill`): the
/// kernel's OOM killer ends the whole container, not one process of it.
fn group_oom_kill() -> std::collections::HashMap<String, String> {
    std::collections::HashMap::from([("memory.oom.group".to_owned(), "1".to_owned())])
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?;
    rt.block_on(async {
        // Generous: under TCG a sandbox takes seconds.
        let mut driver = Driver {
            runtime: Runtime::new(&cli.socket, Duration::from_secs(60)),
            cgroup_root: cli.cgroup_root.clone(),
            pod_logs: cli.pod_logs.clone(),
        };
        match &cli.command {
            Command::Run(pod) => driver.run(pod).await.map(|_| ()),
            Command::Kubelet(pod) => driver.kubelet(pod).await,
            Command::Delete { uid, grace } => driver.delete(uid, *grace).await,
            Command::Ps => driver.ps().await,
            Command::Daemonset {
                manifest,
                uid,
                node_name,
                kubelet_pods,
                configmaps,
            } => {
                let mut edited = Vec::new();
                for c in configmaps {
                    let (key, path) = c
                        .split_once('=')
                        .with_context(|| format!("--configmap {c:?}: expected CONFIGMAP/KEY=PATH"))?;
                    let (name, key) = key
                        .split_once('/')
                        .with_context(|| format!("--configmap {c:?}: expected CONFIGMAP/KEY=PATH"))?;
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("read {path}"))?;
                    edited.push((name.to_owned(), key.to_owned(), text));
                }
                driver
                    .daemonset(manifest, uid, node_name.as_deref(), kubelet_pods, &edited)
                    .await
            }
            Command::ConfigmapUpdate {
                uid,
                volume,
                files,
                kubelet_pods,
            } => {
                let mut data = std::collections::BTreeMap::new();
                for f in files {
                    let (key, path) = f
                        .split_once('=')
                        .with_context(|| format!("--file {f:?}: expected KEY=PATH"))?;
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("read {path}"))?;
                    data.insert(key.to_owned(), text);
                }
                let dir = configmap_dir(kubelet_pods, uid, volume);
                atomic_write(&dir, &data)?;
                say(serde_json::json!({"event": "configmap-updated", "uid": uid, "volume": volume, "dir": dir}));
                Ok(())
            }
        }
    })
}

/// The pod as the driver keeps it: its sandbox and containers, each with the attempt that is
/// (or was last) running; `None` when one is to be made at the next step.
#[derive(Debug)]
struct Running {
    sandbox: Option<String>,
    sandbox_attempts: u32,
    containers: Vec<Slot>,
}

#[derive(Debug)]
struct Slot {
    spec: ContainerSpec,
    id: Option<String>,
    attempts: u32,
}

struct Driver {
    runtime: Runtime,
    cgroup_root: PathBuf,
    pod_logs: PathBuf,
}

impl Driver {
    /// The pod cgroup (as the kubelet's pod container manager makes it), the sandbox, and
    /// every container started; an error at any step is the command's.
    async fn run(&mut self, pod: &PodArgs) -> Result<Running> {
        let mut running = self.new_pod(pod)?;
        self.reconcile(pod, &mut running).await?;
        Ok(running)
    }

    fn new_pod(&self, pod: &PodArgs) -> Result<Running> {
        let cgroup = self.cgroup_root.join(pod.cgroup());
        if !cgroup.is_dir() {
            std::fs::create_dir(&cgroup).with_context(|| format!("mkdir {}", cgroup.display()))?;
        }
        write(&cgroup.join("cgroup.subtree_control"), "+memory +pids")?;
        if let Some(max) = pod.memory_max {
            write(&cgroup.join("memory.max"), &max.to_string())?;
        }
        let containers = pod
            .container_specs()?
            .into_iter()
            .map(|spec| Slot {
                spec,
                id: None,
                attempts: 0,
            })
            .collect();
        Ok(Running {
            sandbox: None,
            sandbox_attempts: 0,
            containers,
        })
    }

    async fn sandbox(&mut self, pod: &PodArgs, attempt: u32) -> Result<String> {
        let log_dir = pod.log_dir(&self.pod_logs);
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("mkdir {}", log_dir.display()))?;
        let config = sandbox_config(pod, attempt, &log_dir)?;
        let result = self
            .runtime
            .client()
            .run_pod_sandbox(v1::RunPodSandboxRequest {
                config: Some(config),
                runtime_handler: String::new(),
            })
            .await;
        let id = self.runtime.check("RunPodSandbox", result)?.pod_sandbox_id;
        say(serde_json::json!({
            "event": "sandbox-started", "uid": pod.uid, "sandbox": id, "attempt": attempt,
        }));
        Ok(id)
    }

    async fn container(
        &mut self,
        pod: &PodArgs,
        sandbox: &str,
        spec: &ContainerSpec,
        attempt: u32,
    ) -> Result<String> {
        let log_dir = pod.log_dir(&self.pod_logs);
        // The kubelet makes the container's log directory; the runtime writes the file.
        let container_logs = log_dir.join(&spec.name);
        std::fs::create_dir_all(&container_logs)
            .with_context(|| format!("mkdir {}", container_logs.display()))?;
        let sandbox_config = sandbox_config(pod, 0, &log_dir)?;
        let labels = HashMap::from([
            (CONTAINER_NAME.to_owned(), spec.name.clone()),
            (POD_NAME.to_owned(), pod.name.clone()),
            (POD_NAMESPACE.to_owned(), pod.namespace.clone()),
            (POD_UID.to_owned(), pod.uid.clone()),
        ]);
        let config = v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: spec.name.clone(),
                attempt,
            }),
            image: Some(v1::ImageSpec {
                image: spec.image.clone(),
                ..Default::default()
            }),
            args: spec.args.clone(),
            labels,
            log_path: format!("{}/{attempt}.log", spec.name),
            linux: Some(v1::LinuxContainerConfig {
                resources: Some(v1::LinuxContainerResources {
                    oom_score_adj: pod.oom_score_adj(),
                    memory_limit_in_bytes: pod
                        .container_memory_max
                        .map_or(0, |m| i64::try_from(m).unwrap_or(i64::MAX)),
                    unified: group_oom_kill(),
                    ..Default::default()
                }),
                security_context: Some(v1::LinuxContainerSecurityContext {
                    namespace_options: Some(namespaces()),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        };
        let id = self
            .create_and_start(sandbox, config, sandbox_config)
            .await?;
        say(serde_json::json!({
            "event": "container-started", "uid": pod.uid, "container": spec.name, "id": id,
            "attempt": attempt, "oomScoreAdj": pod.oom_score_adj(),
        }));
        Ok(id)
    }

    /// `CreateContainer`, then `StartContainer`; a container that fails to start is removed
    /// (not left behind: the next step makes a new one).
    async fn create_and_start(
        &mut self,
        sandbox: &str,
        config: v1::ContainerConfig,
        sandbox_config: v1::PodSandboxConfig,
    ) -> Result<String> {
        let result = self
            .runtime
            .client()
            .create_container(v1::CreateContainerRequest {
                pod_sandbox_id: sandbox.to_owned(),
                config: Some(config),
                sandbox_config: Some(sandbox_config),
            })
            .await;
        let id = self.runtime.check("CreateContainer", result)?.container_id;
        let result = self
            .runtime
            .client()
            .start_container(v1::StartContainerRequest {
                container_id: id.clone(),
            })
            .await;
        if let Err(e) = self.runtime.check("StartContainer", result) {
            let _ = self.remove_container(&id).await;
            return Err(e.into());
        }
        Ok(id)
    }

    /// The kubelet's loop for one pod, every 200 ms, until SIGTERM or SIGINT. A step that
    /// fails (a kill during a container's start, a runtime that is down) is said and tried
    /// again, as the kubelet's pod worker does.
    async fn kubelet(&mut self, pod: &PodArgs) -> Result<()> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            signal_hook::flag::register(signal, Arc::clone(&stop)).context("signal handler")?;
        }
        let mut running = self.new_pod(pod)?;
        while !stop.load(Ordering::SeqCst) {
            if let Err(e) = self.reconcile(pod, &mut running).await {
                say(
                    serde_json::json!({"event": "error", "uid": pod.uid, "error": format!("{e:#}")}),
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.delete(&pod.uid, 0).await
    }

    /// One step towards a running pod: a dead sandbox is stopped with its containers (the
    /// kubelet kills them, stops the sandbox and makes a new one), a missing one made; an
    /// exited container made again (restartPolicy Always, no back-off). The dead are left to
    /// the garbage collector, as the kubelet leaves them; `delete` removes them all.
    async fn reconcile(&mut self, pod: &PodArgs, running: &mut Running) -> Result<()> {
        if let Some(sandbox) = running.sandbox.clone()
            && !self.sandbox_ready(&sandbox).await?
        {
            say(
                serde_json::json!({"event": "sandbox-not-ready", "uid": pod.uid, "sandbox": sandbox}),
            );
            for slot in &mut running.containers {
                if let Some(id) = slot.id.take() {
                    self.container_gone(pod, &slot.spec, &id).await?;
                }
            }
            self.stop_sandbox(&sandbox).await?;
            running.sandbox = None;
        }
        let sandbox = match &running.sandbox {
            Some(sandbox) => sandbox.clone(),
            None => {
                let sandbox = self.sandbox(pod, running.sandbox_attempts).await?;
                running.sandbox_attempts += 1;
                running.sandbox = Some(sandbox.clone());
                sandbox
            }
        };
        for slot in &mut running.containers {
            if let Some(id) = slot.id.clone() {
                let Some((exit, reason)) = self.exit_status(&id).await? else {
                    continue; // running
                };
                slot.id = None;
                say(serde_json::json!({
                    "event": "container-exited", "uid": pod.uid, "container": slot.spec.name,
                    "id": id, "exitCode": exit, "reason": reason,
                }));
            }
            let id = self
                .container(pod, &sandbox, &slot.spec, slot.attempts)
                .await?;
            slot.attempts += 1;
            slot.id = Some(id);
        }
        Ok(())
    }

    async fn sandbox_ready(&mut self, sandbox: &str) -> Result<bool> {
        let result = self
            .runtime
            .client()
            .pod_sandbox_status(v1::PodSandboxStatusRequest {
                pod_sandbox_id: sandbox.to_owned(),
                verbose: false,
            })
            .await;
        match result {
            Err(status) if status.code() == tonic::Code::NotFound => Ok(false),
            result => Ok(self
                .runtime
                .check("PodSandboxStatus", result)?
                .status
                .is_some_and(|s| s.state == v1::PodSandboxState::SandboxReady as i32)),
        }
    }

    /// Says how a container of a dead sandbox ended. The runtime may not have seen its exit
    /// yet (the sandbox's comes first): waited for up to 5 s, then the container is stopped,
    /// as the kubelet kills the containers of a dead sandbox. Left for the garbage collector
    /// (here: `delete`), as the kubelet leaves dead containers.
    async fn container_gone(
        &mut self,
        pod: &PodArgs,
        spec: &ContainerSpec,
        id: &str,
    ) -> Result<()> {
        let mut status = self.exit_status(id).await?;
        for _ in 0..50 {
            if status.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            status = self.exit_status(id).await?;
        }
        let (exit, reason) = match status {
            Some(status) => status,
            None => {
                self.stop_container(id).await?;
                self.exit_status(id).await?.unwrap_or_default()
            }
        };
        say(serde_json::json!({
            "event": "container-exited", "uid": pod.uid, "container": spec.name, "id": id,
            "exitCode": exit, "reason": reason,
        }));
        Ok(())
    }

    /// How the container ended: `None` while it is created or running; a container the
    /// runtime no longer knows has ended (exit code 0, reason "gone").
    async fn exit_status(&mut self, id: &str) -> Result<Option<(i32, String)>> {
        let result = self
            .runtime
            .client()
            .container_status(v1::ContainerStatusRequest {
                container_id: id.to_owned(),
                verbose: false,
            })
            .await;
        if let Err(status) = &result
            && status.code() == tonic::Code::NotFound
        {
            return Ok(Some((0, "gone".to_owned())));
        }
        let status = self.runtime.check("ContainerStatus", result)?.status;
        Ok(status
            .filter(|s| s.state == v1::ContainerState::ContainerExited as i32)
            .map(|s| (s.exit_code, s.reason)))
    }

    async fn stop_container(&mut self, id: &str) -> Result<()> {
        self.stop_container_within(id, 0).await
    }

    /// StopContainer: SIGTERM, then SIGKILL after `grace` seconds.
    async fn stop_container_within(&mut self, id: &str, grace: i64) -> Result<()> {
        let result = self
            .runtime
            .client()
            .stop_container(v1::StopContainerRequest {
                container_id: id.to_owned(),
                timeout: grace,
            })
            .await;
        self.runtime.check("StopContainer", gone_is_done(result))?;
        Ok(())
    }

    async fn remove_container(&mut self, id: &str) -> Result<()> {
        self.remove_container_within(id, 0).await
    }

    async fn remove_container_within(&mut self, id: &str, grace: i64) -> Result<()> {
        self.stop_container_within(id, grace).await?;
        let result = self
            .runtime
            .client()
            .remove_container(v1::RemoveContainerRequest {
                container_id: id.to_owned(),
            })
            .await;
        self.runtime
            .check("RemoveContainer", gone_is_done(result))?;
        Ok(())
    }

    async fn stop_sandbox(&mut self, id: &str) -> Result<()> {
        let result = self
            .runtime
            .client()
            .stop_pod_sandbox(v1::StopPodSandboxRequest {
                pod_sandbox_id: id.to_owned(),
            })
            .await;
        self.runtime.check("StopPodSandbox", gone_is_done(result))?;
        Ok(())
    }

    async fn remove_sandbox(&mut self, id: &str) -> Result<()> {
        self.stop_sandbox(id).await?;
        let result = self
            .runtime
            .client()
            .remove_pod_sandbox(v1::RemovePodSandboxRequest {
                pod_sandbox_id: id.to_owned(),
            })
            .await;
        self.runtime
            .check("RemovePodSandbox", gone_is_done(result))?;
        Ok(())
    }

    /// What the kubelet does when a pod is deleted: every container and sandbox of the pod
    /// stopped and removed, then its cgroup and its log directory. Tried again while it fails
    /// (a container caught starting refuses its removal until it is stopped), as the kubelet's
    /// pod worker retries.
    async fn delete(&mut self, uid: &str, grace: i64) -> Result<()> {
        let mut tries = 0;
        loop {
            match self.delete_once(uid, grace).await {
                Err(e) if tries < 10 => {
                    say(
                        serde_json::json!({"event": "error", "uid": uid, "error": format!("{e:#}")}),
                    );
                    tries += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                result => return result,
            }
        }
    }

    async fn delete_once(&mut self, uid: &str, grace: i64) -> Result<()> {
        let result = self
            .runtime
            .client()
            .list_pod_sandbox(v1::ListPodSandboxRequest {
                filter: Some(v1::PodSandboxFilter {
                    label_selector: HashMap::from([(POD_UID.to_owned(), uid.to_owned())]),
                    ..Default::default()
                }),
            })
            .await;
        let sandboxes = self.runtime.check("ListPodSandbox", result)?.items;
        for sandbox in &sandboxes {
            let result = self
                .runtime
                .client()
                .list_containers(v1::ListContainersRequest {
                    filter: Some(v1::ContainerFilter {
                        pod_sandbox_id: sandbox.id.clone(),
                        ..Default::default()
                    }),
                })
                .await;
            for container in self.runtime.check("ListContainers", result)?.containers {
                self.remove_container_within(&container.id, grace).await?;
            }
            self.remove_sandbox(&sandbox.id).await?;
        }
        for qos in ["kubepods", "kubepods/besteffort", "kubepods/burstable"] {
            let cgroup = self.cgroup_root.join(qos).join(format!("pod{uid}"));
            if cgroup.is_dir() {
                remove_cgroup(&cgroup).await?;
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.pod_logs) {
            for entry in entries.flatten() {
                if entry
                    .file_name()
                    .to_string_lossy()
                    .ends_with(&format!("_{uid}"))
                {
                    std::fs::remove_dir_all(entry.path())
                        .with_context(|| format!("rm -r {}", entry.path().display()))?;
                }
            }
        }
        say(serde_json::json!({"event": "pod-deleted", "uid": uid, "sandboxes": sandboxes.len()}));
        Ok(())
    }

    async fn ps(&mut self) -> Result<()> {
        let sandboxes = self.runtime.pod_sandboxes().await?.items;
        for s in &sandboxes {
            let meta = s.metadata.clone().unwrap_or_default();
            say(serde_json::json!({
                "kind": "sandbox", "id": s.id, "namespace": meta.namespace, "name": meta.name,
                "uid": meta.uid, "attempt": meta.attempt,
                "state": v1::PodSandboxState::try_from(s.state).map_or("?", |s| s.as_str_name()),
            }));
        }
        for c in self.runtime.containers().await?.items {
            let (exit, reason) = self.exit_status(&c.id).await?.unwrap_or_default();
            say(serde_json::json!({
                "kind": "container", "id": c.id, "sandbox": c.pod_sandbox_id,
                "name": c.metadata.map(|m| m.name).unwrap_or_default(),
                "state": v1::ContainerState::try_from(c.state).map_or("?", |s| s.as_str_name()),
                "exitCode": exit, "reason": reason,
            }));
        }
        Ok(())
    }
}

/// The sandbox config the kubelet sends (kuberuntime_sandbox.go), less DNS and ports.
fn sandbox_config(pod: &PodArgs, attempt: u32, log_dir: &Path) -> Result<v1::PodSandboxConfig> {
    let mut labels = HashMap::from([
        (POD_NAME.to_owned(), pod.name.clone()),
        (POD_NAMESPACE.to_owned(), pod.namespace.clone()),
        (POD_UID.to_owned(), pod.uid.clone()),
    ]);
    for label in &pod.labels {
        let (key, value) = label
            .split_once('=')
            .with_context(|| format!("--label {label:?}: expected KEY=VALUE"))?;
        labels.insert(key.to_owned(), value.to_owned());
    }
    Ok(v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            namespace: pod.namespace.clone(),
            attempt,
        }),
        // The kubelet names no hostname for a pod on the node's network (runc refuses one
        // without a private UTS namespace).
        hostname: String::new(),
        log_directory: log_dir.to_string_lossy().into_owned(),
        labels,
        annotations: HashMap::from([("kubernetes.io/config.source".to_owned(), "api".to_owned())]),
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: format!("/{}", pod.cgroup()),
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(namespaces()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The node's network namespace (no CNI here), the pod's IPC, each container its own PIDs.
fn namespaces() -> v1::NamespaceOption {
    v1::NamespaceOption {
        network: v1::NamespaceMode::Node as i32,
        pid: v1::NamespaceMode::Container as i32,
        ipc: v1::NamespaceMode::Pod as i32,
        ..Default::default()
    }
}

/// rmdir, retried while the last tasks are reaped (EBUSY), as the kubelet retries.
async fn remove_cgroup(cgroup: &Path) -> Result<()> {
    let mut last = None;
    for _ in 0..50 {
        // Child cgroups the runtime left (none normally) go first.
        if let Ok(entries) = std::fs::read_dir(cgroup) {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    let _ = std::fs::remove_dir(entry.path());
                }
            }
        }
        match std::fs::remove_dir(cgroup) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    match last {
        Some(e) => Err(e).with_context(|| format!("rmdir {}", cgroup.display())),
        None => bail!("rmdir {}: gave up", cgroup.display()),
    }
}

/// Stopping or removing what is already gone is done.
fn gone_is_done<T: Default>(
    result: Result<tonic::Response<T>, tonic::Status>,
) -> Result<tonic::Response<T>, tonic::Status> {
    match result {
        Err(status) if status.code() == tonic::Code::NotFound => {
            Ok(tonic::Response::new(T::default()))
        }
        result => result,
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).with_context(|| format!("write {value:?} to {}", path.display()))
}

/// One event on stdout, with the guest's uptime, flushed at once (the scenario reads it live).
fn say(mut event: serde_json::Value) {
    let uptime = std::fs::read_to_string("/proc/uptime").ok().and_then(|u| {
        u.split_whitespace()
            .next()
            .and_then(|s| s.parse::<f64>().ok())
    });
    if let (Some(map), Some(uptime)) = (event.as_object_mut(), uptime) {
        map.insert("uptime".to_owned(), uptime.into());
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

/// A pod's ConfigMap volume directory, as the kubelet lays it out.
fn configmap_dir(kubelet_pods: &Path, uid: &str, volume: &str) -> PathBuf {
    kubelet_pods
        .join(uid)
        .join("volumes/kubernetes.io~configmap")
        .join(volume)
}

/// The kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go): the files in a new
/// `..<timestamp>` directory, `..data_tmp` pointing at it renamed over `..data`, each key a
/// symlink `KEY -> ..data/KEY`, the previous timestamped directory removed. A reader of
/// `KEY` sees the old file or the new one, never a mix.
fn atomic_write(dir: &Path, data: &std::collections::BTreeMap<String, String>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let old = std::fs::read_link(dir.join("..data")).ok();
    let stamp = {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("..{}.{:09}", now.as_secs(), now.subsec_nanos())
    };
    let ts = dir.join(&stamp);
    std::fs::create_dir(&ts).with_context(|| format!("mkdir {}", ts.display()))?;
    for (key, text) in data {
        write(&ts.join(key), text)?;
    }
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&stamp, &tmp)
        .with_context(|| format!("symlink {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join("..data"))
        .with_context(|| format!("rename {} over ..data", tmp.display()))?;
    for key in data.keys() {
        let link = dir.join(key);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(format!("..data/{key}"), &link)
                .with_context(|| format!("symlink {}", link.display()))?;
        }
    }
    if let Some(old) = old {
        let old = dir.join(old);
        std::fs::remove_dir_all(&old).with_context(|| format!("rm -r {}", old.display()))?;
    }
    Ok(())
}

/// `MemTotal` in bytes.
fn mem_total() -> Result<i64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("read /proc/meminfo")?;
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        .map(|kb| kb * 1024)
        .context("/proc/meminfo: no MemTotal")
}

impl Driver {
    /// The DaemonSet's pod, as the kubelet would run it here.
    #[allow(
        clippy::too_many_lines,
        reason = "the kubelet's steps in order: pod cgroup, volumes, sandbox, containers"
    )]
    async fn daemonset(
        &mut self,
        manifest: &Path,
        uid: &str,
        node_name: Option<&str>,
        kubelet_pods: &Path,
        edited: &[(String, String, String)],
    ) -> Result<()> {
        use daemonset::{EnvValue, Volume};
        let text = std::fs::read_to_string(manifest)
            .with_context(|| format!("read {}", manifest.display()))?;
        let mut plan = daemonset::plan(&text, mem_total()?)
            .with_context(|| format!("{}", manifest.display()))?;
        for (configmap, key, text) in edited {
            let mut found = false;
            for volume in plan.volumes.values_mut() {
                if let Volume::ConfigMap { name, data } = volume
                    && name == configmap
                {
                    data.insert(key.clone(), text.clone());
                    found = true;
                }
            }
            if !found {
                bail!("--configmap {configmap}/{key}: the pod mounts no ConfigMap {configmap}");
            }
        }
        let node = match node_name {
            Some(n) => n.to_owned(),
            None => std::fs::read_to_string("/proc/sys/kernel/hostname")
                .context("the host name")?
                .trim()
                .to_owned(),
        };
        // DaemonSet pods are named after it with a random suffix.
        let name = format!("{}-{}", plan.daemonset, uid.get(..5).unwrap_or(uid));
        // The pod cgroup, as the kubelet's pod container manager makes it.
        let cgroup_rel = daemonset::pod_cgroup(plan.score.qos_class, uid);
        let cgroup = self.cgroup_root.join(&cgroup_rel);
        if !cgroup.is_dir() {
            std::fs::create_dir(&cgroup).with_context(|| format!("mkdir {}", cgroup.display()))?;
        }
        write(&cgroup.join("cgroup.subtree_control"), "+memory +pids")?;
        if let Some(max) = plan.score.pod_memory_max_bytes {
            write(&cgroup.join("memory.max"), &max.to_string())?;
        }
        // The volumes' host directories.
        let mut host_paths = HashMap::new();
        for (vname, volume) in &plan.volumes {
            let path = match volume {
                Volume::HostPath { path, kind } => {
                    let p = PathBuf::from(path);
                    match kind.as_str() {
                        "DirectoryOrCreate" => std::fs::create_dir_all(&p)
                            .with_context(|| format!("volume {vname}: mkdir {path}"))?,
                        "Directory" if !p.is_dir() => {
                            bail!(
                                "volume {vname}: hostPath {path} is not a directory (type Directory)"
                            )
                        }
                        _ => {}
                    }
                    p
                }
                Volume::ConfigMap { data, .. } => {
                    let dir = configmap_dir(kubelet_pods, uid, vname);
                    atomic_write(&dir, data)?;
                    dir
                }
            };
            host_paths.insert(vname.clone(), path);
        }
        let log_dir = self
            .pod_logs
            .join(format!("{}_{}_{}", plan.namespace, name, uid));
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("mkdir {}", log_dir.display()))?;
        let mut labels: HashMap<String, String> = plan.labels.clone().into_iter().collect();
        labels.insert(POD_NAME.to_owned(), name.clone());
        labels.insert(POD_NAMESPACE.to_owned(), plan.namespace.clone());
        labels.insert(POD_UID.to_owned(), uid.to_owned());
        let mut annotations: HashMap<String, String> =
            plan.annotations.clone().into_iter().collect();
        annotations.insert("kubernetes.io/config.source".to_owned(), "api".to_owned());
        let namespaces = v1::NamespaceOption {
            // No CNI in the VM: the node's network (the manifest's pod has its own).
            network: v1::NamespaceMode::Node as i32,
            pid: if plan.host_pid {
                v1::NamespaceMode::Node
            } else {
                v1::NamespaceMode::Container
            } as i32,
            ipc: if plan.host_ipc {
                v1::NamespaceMode::Node
            } else {
                v1::NamespaceMode::Pod
            } as i32,
            ..Default::default()
        };
        let privileged = plan.containers.iter().any(|c| c.privileged);
        let sandbox_config = v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: name.clone(),
                uid: uid.to_owned(),
                namespace: plan.namespace.clone(),
                attempt: 0,
            }),
            hostname: String::new(),
            log_directory: log_dir.to_string_lossy().into_owned(),
            port_mappings: plan
                .containers
                .iter()
                .flat_map(|c| c.ports.iter())
                .map(|(port, protocol)| v1::PortMapping {
                    protocol: match protocol.as_str() {
                        "UDP" => v1::Protocol::Udp,
                        "SCTP" => v1::Protocol::Sctp,
                        _ => v1::Protocol::Tcp,
                    } as i32,
                    container_port: *port,
                    ..Default::default()
                })
                .collect(),
            labels: labels.clone(),
            annotations: annotations.clone(),
            linux: Some(v1::LinuxPodSandboxConfig {
                cgroup_parent: format!("/{cgroup_rel}"),
                security_context: Some(v1::LinuxSandboxSecurityContext {
                    namespace_options: Some(namespaces.clone()),
                    // The kubelet runs a privileged sandbox when a container is privileged.
                    privileged,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let result = self
            .runtime
            .client()
            .run_pod_sandbox(v1::RunPodSandboxRequest {
                config: Some(sandbox_config.clone()),
                runtime_handler: String::new(),
            })
            .await;
        let sandbox = self.runtime.check("RunPodSandbox", result)?.pod_sandbox_id;
        say(
            serde_json::json!({"event": "sandbox-started", "uid": uid, "sandbox": sandbox, "name": name,
            "namespace": plan.namespace, "cgroup": cgroup_rel, "qos": plan.score.qos_class,
            "memoryMax": plan.score.pod_memory_max_bytes.map(|m| m.to_string()), "priority": plan.priority,
            "terminationGracePeriodSeconds": plan.grace_seconds}),
        );
        for (c, score) in plan.containers.iter().zip(&plan.score.containers) {
            if c.pull_policy == "Always" {
                bail!(
                    "container {}: imagePullPolicy Always needs a registry; the VM has none (import the image)",
                    c.name
                );
            }
            let container_logs = log_dir.join(&c.name);
            std::fs::create_dir_all(&container_logs)
                .with_context(|| format!("mkdir {}", container_logs.display()))?;
            let envs = c
                .env
                .iter()
                .map(|(key, value)| v1::KeyValue {
                    key: key.clone(),
                    value: match value {
                        EnvValue::Value(v) => v.clone(),
                        EnvValue::Field(f) => match f.as_str() {
                            "spec.nodeName" => node.clone(),
                            "metadata.name" => name.clone(),
                            "metadata.namespace" => plan.namespace.clone(),
                            _ => uid.to_owned(),
                        },
                    }
                    .into_bytes(),
                })
                .collect();
            let mounts = c
                .mounts
                .iter()
                .map(|m| v1::Mount {
                    container_path: m.path.clone(),
                    host_path: host_paths
                        .get(&m.volume)
                        .map(|p| p.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                    readonly: m.read_only,
                    ..Default::default()
                })
                .collect();
            let mut clabels = labels.clone();
            clabels.insert(CONTAINER_NAME.to_owned(), c.name.clone());
            let config = v1::ContainerConfig {
                metadata: Some(v1::ContainerMetadata {
                    name: c.name.clone(),
                    attempt: 0,
                }),
                image: Some(v1::ImageSpec {
                    image: c.image.clone(),
                    ..Default::default()
                }),
                command: c.command.clone(),
                args: c.args.clone(),
                envs,
                mounts,
                labels: clabels,
                log_path: format!("{}/0.log", c.name),
                linux: Some(v1::LinuxContainerConfig {
                    resources: Some(v1::LinuxContainerResources {
                        cpu_period: 100_000,
                        cpu_quota: daemonset::cpu_quota(c.cpu_limit_milli),
                        cpu_shares: daemonset::cpu_shares(c.cpu_request_milli),
                        memory_limit_in_bytes: c.memory_limit.unwrap_or(0),
                        oom_score_adj: score.oom_score_adj,
                        unified: group_oom_kill(),
                        ..Default::default()
                    }),
                    security_context: Some(v1::LinuxContainerSecurityContext {
                        namespace_options: Some(namespaces.clone()),
                        privileged: c.privileged,
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            };
            let id = self
                .create_and_start(&sandbox, config, sandbox_config.clone())
                .await?;
            say(
                serde_json::json!({"event": "container-started", "uid": uid, "container": c.name, "id": id,
                "oomScoreAdj": score.oom_score_adj, "cpuShares": daemonset::cpu_shares(c.cpu_request_milli),
                "cpuQuota": daemonset::cpu_quota(c.cpu_limit_milli), "memoryLimit": c.memory_limit,
                "probes": c.probes.iter().map(|(kind, path, port)| serde_json::json!({"kind": kind, "path": path, "port": port})).collect::<Vec<_>>()}),
            );
        }
        Ok(())
    }
}
