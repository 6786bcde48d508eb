//! The pod-identity cache's configuration from the `containerRuntime` settings.

/// The identity cache's configuration for the `containerRuntime` settings.
pub fn identity_config(
    runtime: &oomwarden_config::ContainerRuntimeSettings,
) -> oomwarden_identity::Config {
    oomwarden_identity::Config {
        endpoint: match &runtime.endpoint {
            oomwarden_config::RuntimeEndpoint::Auto => oomwarden_identity::Endpoint::auto(),
            oomwarden_config::RuntimeEndpoint::Unix(path) => {
                oomwarden_identity::Endpoint::Unix(path.clone())
            }
            oomwarden_config::RuntimeEndpoint::None => oomwarden_identity::Endpoint::Off,
        },
        pod_logs: runtime.pod_logs.clone(),
        refresh_every: runtime.refresh_every,
        timeout: IDENTITY_TIMEOUT,
    }
}

/// The deadline of one identity refresh from the container runtime.
const IDENTITY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
