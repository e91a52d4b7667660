//! Links the worker against the Python pyo3 was configured for (the project's `.venv`, see
//! `.cargo/config.toml`) and records where that Python's shared library lives, so binaries
//! find it without `LD_LIBRARY_PATH`. Dependents get the directory as
//! `DEP_SEMFUZZ_PYTHON_LIB_DIR` for their own rpath.

fn main() {
    let config = pyo3_build_config::get();
    if let Some(dir) = config.lib_dir() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        println!("cargo:lib_dir={dir}");
    }
    let version = config.version();
    println!(
        "cargo:rustc-env=SEMFUZZ_BUILD_PYTHON_VERSION={}.{}",
        version.major, version.minor
    );
    if let Some(exe) = config.executable() {
        println!("cargo:rustc-env=SEMFUZZ_BUILD_PYTHON={exe}");
    }
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
}
