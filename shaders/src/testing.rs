//! Test helpers: GLSL and SPIR-V assembly to words through the system's
//! glslangValidator and spirv-as (installed by ci/setup), and word-level
//! patches for the invalid modules those tools refuse to make.

use std::process::Command;

fn scratch(ext: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("overlap-shaders-{}-{n}.{ext}", std::process::id()))
}

fn words_of(path: &std::path::Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap();
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    keep_for_fuzzing(&words);
    words
}

/// With `OVERLAP_SHADERS_CORPUS=DIR` set, every module the tests compile,
/// assemble or optimise is also written to DIR, as seeds for the fuzz harness
/// (`cargo run --release -p overlap-shaders --bin fuzz -- --corpus DIR`).
fn keep_for_fuzzing(words: &[u32]) {
    use std::hash::{Hash, Hasher};
    let Some(dir) = std::env::var_os("OVERLAP_SHADERS_CORPUS") else { return };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    words.hash(&mut h);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(std::path::Path::new(&dir).join(format!("{:016x}.spv", h.finish())), bytes);
}

/// Runs `tool` with `args`, `-o OUTPUT` and an input file holding `text`
/// (named with `ext`), and returns the words it writes; on failure, what
/// `failed` makes of its output.
fn words_from(
    tool: &str,
    args: &[&str],
    ext: &str,
    text: &str,
    failed: impl FnOnce(&std::process::Output) -> String,
) -> Result<Vec<u32>, String> {
    let input = scratch(ext);
    let output = scratch("spv");
    std::fs::write(&input, text).unwrap();
    let out = Command::new(tool)
        .args(args)
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| format!("{tool}: {e}"))?;
    let _ = std::fs::remove_file(&input);
    if !out.status.success() {
        return Err(failed(&out));
    }
    let w = words_of(&output);
    let _ = std::fs::remove_file(&output);
    Ok(w)
}

/// Compiles GLSL of `stage` (vert, frag, ...) for Vulkan 1.1.
pub fn glsl(src: &str, stage: &str) -> Result<Vec<u32>, String> {
    glsl_for(src, stage, "vulkan1.1")
}

/// Compiles GLSL of `stage` for the target environment `env` (vulkan1.0 ...).
pub fn glsl_for(src: &str, stage: &str, env: &str) -> Result<Vec<u32>, String> {
    words_from("glslangValidator", &["-V", "--target-env", env], stage, src, |out| {
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

/// Assembles SPIR-V text with spirv-as.
pub fn assemble_text(text: &str) -> Result<Vec<u32>, String> {
    words_from("spirv-as", &["--target-env", "vulkan1.1"], "spvasm", text, |out| {
        String::from_utf8_lossy(&out.stderr).into_owned()
    })
}

/// Disassembles words with spirv-dis.
pub fn disassemble(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    disassemble_bytes(&bytes)
}

/// Disassembles a module's bytes (an embedded `.spv`) with spirv-dis.
pub fn disassemble_bytes(bytes: &[u8]) -> String {
    let input = scratch("spv");
    std::fs::write(&input, bytes).unwrap();
    let out = Command::new("spirv-dis").arg(&input).output().expect("spirv-dis");
    let _ = std::fs::remove_file(&input);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs spirv-opt -O (SSA form, as drivers' front ends and DXC produce).
pub fn optimize(words: &[u32]) -> Vec<u32> {
    let input = scratch("spv");
    let output = scratch("spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&input, bytes).unwrap();
    let out = Command::new("spirv-opt").arg("-O").arg(&input).arg("-o").arg(&output).output().expect("spirv-opt");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let w = words_of(&output);
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    w
}

/// Two begin/end pairs, each under its own divergent condition (as DXC emits
/// for rasterizer-ordered views), in SPIR-V assembly.
pub const DIVERGENT_PAIRS: &str = r#"
               OpCapability Shader
               OpCapability FragmentShaderPixelInterlockEXT
               OpExtension "SPV_EXT_fragment_shader_interlock"
               OpMemoryModel Logical GLSL450
               OpEntryPoint Fragment %main "main" %coord
               OpExecutionMode %main OriginUpperLeft
               OpExecutionMode %main PixelInterlockOrderedEXT
               OpDecorate %coord BuiltIn FragCoord
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %vec4 = OpTypeVector %float 4
     %in_ptr = OpTypePointer Input %vec4
      %coord = OpVariable %in_ptr Input
       %bool = OpTypeBool
        %two = OpConstant %float 2
       %main = OpFunction %void None %fn
      %entry = OpLabel
         %fc = OpLoad %vec4 %coord
          %x = OpCompositeExtract %float %fc 0
       %left = OpFOrdLessThan %bool %x %two
               OpSelectionMerge %merge None
               OpBranchConditional %left %a %b
          %a = OpLabel
               OpBeginInvocationInterlockEXT
               OpEndInvocationInterlockEXT
               OpBranch %merge
          %b = OpLabel
               OpBeginInvocationInterlockEXT
               OpEndInvocationInterlockEXT
               OpBranch %merge
      %merge = OpLabel
               OpReturn
               OpFunctionEnd
"#;

/// The instructions of SPIR-V `words` after the header: (offset of the first
/// word, opcode, word count), up to the first malformed word count.
pub fn instructions(words: &[u32]) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    let mut at = 5;
    while let Some(&w) = words.get(at) {
        let len = (w >> 16) as usize;
        if len == 0 || at + len > words.len() {
            break;
        }
        out.push((at, w & 0xffff, len));
        at += len;
    }
    out
}

/// Calls `f` on the words of the first instruction of `op` for which
/// `which` holds, returning what `f` returns; panics if there is none.
pub fn patch<T>(
    words: &mut [u32],
    op: rspirv::spirv::Op,
    which: impl Fn(&[u32]) -> bool,
    f: impl FnOnce(&mut [u32]) -> T,
) -> T {
    let (at, _, len) = instructions(words)
        .into_iter()
        .find(|(at, o, len)| *o == op as u32 && which(&words[*at..at + len]))
        .unwrap_or_else(|| panic!("no {op:?} to patch"));
    f(&mut words[at..at + len])
}

/// Removes the first instruction of `op` for which `which` holds; panics
/// if there is none.
pub fn remove(words: &mut Vec<u32>, op: rspirv::spirv::Op, which: impl Fn(&[u32]) -> bool) {
    let (at, _, len) = instructions(words)
        .into_iter()
        .find(|(at, o, len)| *o == op as u32 && which(&words[*at..at + len]))
        .unwrap_or_else(|| panic!("no {op:?} to remove"));
    words.drain(at..at + len);
}

/// `%v4float = OpTypeVector %v4float 4`: the first 4-component vector type
/// made its own component type. Returns its id.
pub fn self_referential_vector(words: &mut [u32]) -> u32 {
    patch(
        words,
        rspirv::spirv::Op::TypeVector,
        |w| w[3] == 4,
        |w| {
            w[2] = w[1];
            w[1]
        },
    )
}

/// Checks a module lowered from one whose only capability implied `Shader`
/// (`context` names the case): it validates, declares `Shader`, and no
/// capability named with `removed` is left.
pub fn assert_shader_declared(m: &rspirv::dr::Module, context: &str, removed: &str) {
    let out = crate::assemble(m);
    let text = disassemble(&out);
    crate::validate(&out, crate::TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{context}: {e}\n{text}"));
    assert!(text.contains("OpCapability Shader") && !text.contains(removed), "{text}");
}

/// For each interlock granularity: the module whose only capability is that
/// interlock's (valid), lowered by `lower`, validates and declares `Shader`,
/// with no interlock capability left.
pub fn lowering_keeps_shader_declared(lower: impl Fn(&mut rspirv::dr::Module)) {
    for granularity in ["pixel", "sample", "shading_rate"] {
        let words = only_interlock_capability(granularity);
        crate::validate(&words, crate::TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{granularity} input: {e}"));
        let mut m = crate::parse(&words).unwrap();
        lower(&mut m);
        assert_shader_declared(&m, granularity, "Interlock");
    }
}

/// A fragment shader with one critical section whose only capability is
/// the interlock one of `granularity` ("pixel", "sample" or "shading_rate"),
/// which implies `Shader`.
pub fn only_interlock_capability(granularity: &str) -> Vec<u32> {
    use rspirv::spirv::{Capability, ExecutionMode, Op};
    let mode = if granularity == "sample" { "sample" } else { "pixel" };
    let src = format!("#version 450\n#extension GL_ARB_fragment_shader_interlock : require\nlayout({mode}_interlock_ordered) in;\nlayout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) out vec4 o;\nvoid main() {{ ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); imageStore(img, p, imageLoad(img, p) + 1u); endInvocationInterlockARB(); o = vec4(1); }}\n");
    let mut words = glsl(&src, "frag").unwrap();
    remove(&mut words, Op::Capability, |w| w[1] == Capability::Shader as u32);
    if granularity == "shading_rate" {
        let pixel = Capability::FragmentShaderPixelInterlockEXT as u32;
        patch(
            &mut words,
            Op::Capability,
            |w| w[1] == pixel,
            |w| w[1] = Capability::FragmentShaderShadingRateInterlockEXT as u32,
        );
        let ordered = ExecutionMode::PixelInterlockOrderedEXT as u32;
        patch(
            &mut words,
            Op::ExecutionMode,
            |w| w[2] == ordered,
            |w| w[2] = ExecutionMode::ShadingRateInterlockOrderedEXT as u32,
        );
    }
    words
}
