//! Records what built the extension, for every run's provenance (`_core.BUILD_INFO`): the Rust
//! compiler's version and, when built from a git checkout, its commit and whether the tracked
//! files differed from it. A wheel carries these to machines that have neither git nor the source.

use std::process::Command;

fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = output_of(&rustc, &["-V"]).unwrap_or_default();
    let commit = output_of("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    // Untracked files (build outputs, runs) are not part of the source that was built.
    let dirty = if commit.is_empty() {
        String::new()
    } else {
        let status = output_of("git", &["status", "--porcelain", "--untracked-files=no"]);
        status.map(|s| (!s.is_empty()).to_string()).unwrap_or_default()
    };
    println!("cargo:rustc-env=CCLAB_BUILD_RUSTC={rustc_version}");
    println!("cargo:rustc-env=CCLAB_BUILD_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=CCLAB_BUILD_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=CCLAB_BUILD_PROFILE={}", std::env::var("PROFILE").unwrap_or_default());
    // Rebuilt when the commit moves; a wheel is built from a fresh checkout anyway.
    if let Some(git_dir) = output_of("git", &["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
