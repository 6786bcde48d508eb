//! Regenerates `crates/cri/src/generated/runtime.v1.rs` from `crates/cri/proto/api.proto`
//! (kubernetes/cri-api, `pkg/apis/runtime/v1/api.proto`), or with `--check` says whether the
//! checked-in file is what the proto generates (exit 1 when it is not).
//!
//! ```text
//! cargo run --manifest-path tools/gen-cri/Cargo.toml            # rewrite
//! cargo run --manifest-path tools/gen-cri/Cargo.toml -- --check # compare
//! ```
//!
//! Updating the CRI: copy a newer `api.proto` into `crates/cri/proto/`, note its tag there,
//! run this, build, commit both.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let proto_dir = root.join("crates/cri/proto");
    let target = root.join("crates/cri/src/generated/runtime.v1.rs");
    let out = match tempfile_dir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("gen-cri: cannot make a temporary directory: {e}");
            return ExitCode::from(2);
        }
    };
    let protoc = match protoc_bin_vendored::protoc_bin_path() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("gen-cri: no vendored protoc for this platform: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: single-threaded here; prost-build reads PROTOC.
    unsafe { std::env::set_var("PROTOC", protoc) };
    if let Err(e) = tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .out_dir(&out)
        .compile_protos(&[proto_dir.join("api.proto")], &[proto_dir])
    {
        eprintln!("gen-cri: {e}");
        return ExitCode::from(2);
    }
    let generated = match std::fs::read_to_string(out.join("runtime.v1.rs")) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("gen-cri: cannot read the generated file: {e}");
            return ExitCode::from(2);
        }
    };
    let _ = std::fs::remove_dir_all(&out);
    if check {
        let current = std::fs::read_to_string(&target).unwrap_or_default();
        if current == generated {
            println!("{} is what api.proto generates", target.display());
            ExitCode::SUCCESS
        } else {
            eprintln!(
                "{} differs from what api.proto generates: run cargo run --manifest-path tools/gen-cri/Cargo.toml",
                target.display()
            );
            ExitCode::FAILURE
        }
    } else if let Err(e) = std::fs::write(&target, generated) {
        eprintln!("gen-cri: cannot write {}: {e}", target.display());
        ExitCode::from(2)
    } else {
        println!("wrote {}", target.display());
        ExitCode::SUCCESS
    }
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("gen-cri-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
