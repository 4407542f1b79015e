//! The layering check `ci/test` runs (`ci/module-cycles`) fires where it
//! should: on a copy of `layer/src` with one planted import it fails and
//! names what it found; on the unchanged copy it passes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// `ci/module-cycles` on a fresh copy of `layer/src` in which `plant`
/// appends `line` to the file `file` (none: unchanged): its exit code and
/// output.
fn check_with(plant: Option<(&str, &str)>) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!(
        "overlap-layering-{}-{}",
        std::process::id(),
        plant.map_or("none", |p| p.0).replace('/', "_")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("src");
    let cp = Command::new("cp").arg("-r").arg(repo().join("layer/src")).arg(&src).status().unwrap();
    assert!(cp.success());
    if let Some((file, line)) = plant {
        let path = src.join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(line);
        std::fs::write(&path, text).unwrap();
    }
    let o = Command::new("python3").arg(repo().join("ci/module-cycles")).arg(&src).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Whether the check's output has a cycle line of `folder` naming every one
/// of `files`.
fn cycle_with(out: &str, folder: &str, files: &[&str]) -> bool {
    out.lines().any(|l| l.starts_with(folder) && files.iter().all(|f| l.split(' ').any(|w| w == *f)))
}

#[test]
fn the_layering_check_passes_the_tree_and_fails_planted_imports() {
    let (code, out) = check_with(None);
    assert_eq!(code, Some(0), "{out}");
    // A model file of the density map naming a hook file: a cycle inside fdm/.
    let (code, out) = check_with(Some(("fdm/model.rs", "\n// [`super::pass`]\n")));
    assert_eq!(code, Some(1), "{out}");
    assert!(cycle_with(&out, "fdm/:", &["model", "pass"]), "{out}");
    // A grouped import counts too: the ordered strategy's state naming its draws.
    let (code, out) = check_with(Some(("interlock/cells.rs", "\n#[allow(unused_imports)]\nuse super::{ordered};\n")));
    assert_eq!(code, Some(1), "{out}");
    assert!(cycle_with(&out, "interlock/:", &["cells", "ordered"]), "{out}");
    // One capability importing another.
    let (code, out) = check_with(Some(("fdm/mod.rs", "\n// crate::interlock\n")));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("capability fdm imports capability interlock"), "{out}");
}
