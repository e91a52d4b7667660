//! The binary links libpython through harness-py (for its worker mode); record where that
//! library lives so `semfuzz` runs without `LD_LIBRARY_PATH`.

fn main() {
    if let Ok(dir) = std::env::var("DEP_SEMFUZZ_PYTHON_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
