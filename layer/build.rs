fn main() {
    let map = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("exports.map");
    println!("cargo:rerun-if-changed={}", map.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", map.display());
    // Bind the library's references to its own exported functions inside the
    // library. Without this, the address of `vkGetInstanceProcAddr` that
    // negotiation hands the loader resolves (ELF interposition) to the
    // loader's own export in any program linked against libvulkan, and
    // vkCreateInstance recurses into the loader and deadlocks.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
}
