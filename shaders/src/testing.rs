//! Test helpers: GLSL and SPIR-V assembly to words through the system's
//! glslangValidator and spirv-as (installed by ci/setup).

use std::process::Command;

fn scratch(ext: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("overlap-shaders-{}-{n}.{ext}", std::process::id()))
}

fn words_of(path: &std::path::Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap();
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Compiles GLSL of `stage` (vert, frag, ...) for Vulkan 1.1.
pub fn glsl(src: &str, stage: &str) -> Result<Vec<u32>, String> {
    let input = scratch(stage);
    let output = scratch("spv");
    std::fs::write(&input, src).unwrap();
    let out = Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.1", "-o"])
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| format!("glslangValidator: {e}"))?;
    let _ = std::fs::remove_file(&input);
    if !out.status.success() {
        return Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    let w = words_of(&output);
    let _ = std::fs::remove_file(&output);
    Ok(w)
}

/// Assembles SPIR-V text with spirv-as.
pub fn assemble_text(text: &str) -> Result<Vec<u32>, String> {
    let input = scratch("spvasm");
    let output = scratch("spv");
    std::fs::write(&input, text).unwrap();
    let out = Command::new("spirv-as")
        .args(["--target-env", "vulkan1.1", "-o"])
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| format!("spirv-as: {e}"))?;
    let _ = std::fs::remove_file(&input);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let w = words_of(&output);
    let _ = std::fs::remove_file(&output);
    Ok(w)
}

/// Disassembles words with spirv-dis.
pub fn disassemble(words: &[u32]) -> String {
    let input = scratch("spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
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
