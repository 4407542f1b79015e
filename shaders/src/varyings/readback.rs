//! Tests (issue 35): the pair linker against producers that read back their
//! own outputs, write them in parts, under conditions, repeatedly, in called
//! functions or through pointers passed on. Each pair is linked at `safe`
//! and `full` and *evaluated* with [`crate::interp`], a small SPIR-V
//! interpreter for the subset these shaders use (memory, access chains,
//! control flow, calls, 32-bit arithmetic and composites): it runs the
//! vertex shader on the three vertices of a triangle, interpolates its
//! location outputs at one point (flat ones from the first vertex) and runs
//! the fragment shader; the linked pair must write the same fragment
//! outputs as the original (up to interpolation rounding), so a valid but
//! wrong module fails.

use super::{link, Level, Report};
use crate::interp::{close, render};
use crate::testing::{assemble_text, disassemble, glsl};
use crate::{assemble, parse, validate, TargetEnv};

/// Links the pair (vertex, fragment SPIR-V) at `level`, checks that both
/// validate, and that they render what the originals render (which must be
/// defined) for a few triangles.
fn same_picture(vs: &[u32], fs: &[u32], level: Level) -> Report {
    let (p0, c0) = (parse(vs).unwrap(), parse(fs).unwrap());
    let (mut p, mut c) = (p0.clone(), c0.clone());
    let report = link(&mut p, &mut c, level).unwrap();
    let (pw, cw) = (assemble(&p), assemble(&c));
    validate(&pw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("producer: {e}\n{}", disassemble(&pw)));
    validate(&cw, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("consumer: {e}\n{}", disassemble(&cw)));
    super::tests::interface_matches(&p, &c);
    for first in [0, 3, 7] {
        let before = render(&p0, &c0, first).unwrap_or_else(|e| panic!("original: {e}"));
        assert!(!before.is_empty() && before.values().all(|v| close(v, v)), "original undefined: {before:?}");
        let after = render(&p, &c, first)
            .unwrap_or_else(|e| panic!("linked ({level:?}): {e}\n{report:?}\n{}", disassemble(&pw)));
        let same = before.len() == after.len() && before.iter().all(|(s, v)| after.get(s).is_some_and(|w| close(v, w)));
        assert!(same, "{level:?}: {before:?} became {after:?}\n{report:?}\n{}\n{}", disassemble(&pw), disassemble(&cw));
    }
    report
}

/// [`same_picture`] of a vertex shader optimized by `spirv-opt -O` (SSA
/// values, phis, one id stored in several places).
fn optimized_picture(vs: &str, fs: &str, level: Level) -> Report {
    same_picture(&crate::testing::optimize(&glsl(vs, "vert").unwrap()), &glsl(fs, "frag").unwrap(), level)
}

fn glsl_picture(vs: &str, fs: &str, level: Level) -> Report {
    same_picture(&glsl(vs, "vert").unwrap(), &glsl(fs, "frag").unwrap(), level)
}

const VS: &str = "#version 450\nlayout(location = 0) in float in0;\n";
const FS: &str = "#version 450\nlayout(location = 0) out vec4 o;\n";

/// Issue 35's shape: the vertex shader reads back `var1` to compute
/// `var2`. Moving the sum into `var1` (the reported `(0, 1)`) loaded `var1`
/// before anything stored it; now the sum goes into `var2`, which nothing
/// reads back, and `var1` keeps its store for the read-back.
#[test]
fn issue_35_an_output_read_back_keeps_its_value() {
    let vs = format!(
        "{VS}layout(location = 0) out float var1;\nlayout(location = 1) out float var2;\n\
         void main() {{ var1 = in0; var2 = var1 + in0; gl_Position = vec4(in0); }}\n"
    );
    let fs = format!(
        "{FS}layout(location = 0) in float var1;\nlayout(location = 1) in float var2;\n\
         void main() {{ o = vec4(var1 + var2); }}\n"
    );
    let r = glsl_picture(&vs, &fs, Level::Full);
    assert_eq!(r.moved_sums, vec![(1, 0)], "{r:?}");
    assert_eq!(r.locations_after, 1, "{r:?}");
    let r = glsl_picture(&vs, &fs, Level::Safe);
    assert!(r.moved_sums.is_empty(), "{r:?}");
    // Both read back: the sum stays in the consumer.
    let both = vs.replace("gl_Position = vec4(in0);", "gl_Position = vec4(var1, var2, 0, 1);");
    let r = glsl_picture(&both, &fs, Level::Full);
    assert!(r.moved_sums.is_empty(), "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("the sum stays in the consumer")), "{r:?}");
}

/// Siblings, each evaluated at both levels: read back through an access
/// chain on a vector component, after a conditional or repeated write, in
/// a called function; written in part after a whole store; kept in the
/// output throughout (as HLSL translators emit); a constant, a sum with a
/// constant.
#[test]
fn outputs_read_back_written_in_parts_or_under_conditions_link_soundly() {
    let vec_pair = |body: &str| {
        (
            format!("{VS}layout(location = 0) out vec4 a;\nlayout(location = 1) out vec4 b;\nvoid main() {{ gl_Position = vec4(in0); {body} }}\n"),
            format!("{FS}layout(location = 0) in vec4 a;\nlayout(location = 1) in vec4 b;\nvoid main() {{ o = a + b; }}\n"),
        )
    };
    let float_pair = |decls: &str, body: &str| {
        (
            format!("{VS}layout(location = 0) out float var1;\nlayout(location = 1) out float var2;\n{decls}\nvoid main() {{ gl_Position = vec4(in0); {body} }}\n"),
            format!("{FS}layout(location = 0) in float var1;\nlayout(location = 1) in float var2;\nvoid main() {{ o = vec4(var1 + var2); }}\n"),
        )
    };
    let cases: Vec<(&str, (String, String))> = vec![
        ("a vec4 component read back", vec_pair("a = vec4(in0, 1, 2, 3); b = vec4(a.x * 2.0, in0, 4, a.w);")),
        ("a component written after a whole store", vec_pair("a = vec4(in0); a.y = 5.0; b = vec4(in0, 2, 3, 4);")),
        ("a whole store after a component", vec_pair("a.y = 5.0; a = vec4(in0); b = vec4(in0, 2, 3, 4) + a;")),
        (
            "read back after a conditional write",
            float_pair("", "var1 = in0; if (in0 > 2.0) { var1 = in0 * 3.0; } var2 = var1 + in0;"),
        ),
        (
            "stored only under a condition",
            float_pair("", "var1 = 1.0; var2 = in0; if (in0 > 2.0) { var1 = var2 * 0.5; }"),
        ),
        ("repeated writes", float_pair("", "var1 = in0; var1 = var1 * 2.0; var2 = var1 + 1.0; var1 = var1 + var2;")),
        ("read back in a called function", float_pair("void f() { var2 = var1 + in0; }", "var1 = in0; f();")),
        (
            "written in a called function, read back",
            float_pair("void f(float x) { var1 = x; }", "f(in0); var2 = var1 * 2.0;"),
        ),
        (
            "written in a loop",
            float_pair("", "var2 = 0.0; for (int i = 0; i < 3; i++) { var1 = in0 * float(i); var2 = var2 + var1; }"),
        ),
    ];
    let mut failed = vec![];
    for (what, (vs, fs)) in &cases {
        for level in [Level::Safe, Level::Full] {
            if std::panic::catch_unwind(|| glsl_picture(vs, fs, level)).is_err() {
                failed.push(format!("{what} ({level:?})"));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A constant read back is propagated (the producer's variable, private,
/// keeps it); a product by a constant of an output read back is not moved
/// into it (the producer would read the product); a dead output read back
/// becomes private and keeps its store.
#[test]
fn constants_and_dead_outputs_read_back() {
    // A constant read back (propagated, the producer's variable keeps it);
    // a constant sum read back (not moved: the producer would read the sum).
    let vs = format!(
        "{VS}layout(location = 0) flat out float k;\nlayout(location = 1) noperspective out float t;\n\
         layout(location = 2) out float u;\n\
         void main() {{ k = 0.5; t = in0 * 0.25; u = t + k; gl_Position = vec4(in0); }}\n"
    );
    let fs = format!(
        "{FS}layout(location = 0) flat in float k;\nlayout(location = 1) noperspective in float t;\n\
         layout(location = 2) in float u;\nvoid main() {{ o = vec4(t * 3.0, u, k, 1.0); }}\n"
    );
    for level in [Level::Safe, Level::Full] {
        let r = glsl_picture(&vs, &fs, level);
        assert_eq!(r.propagated_constants, vec![0], "{r:?}");
        assert!(!r.moved_constant_ops.contains(&1), "{r:?}");
    }
    // A dead output the producer reads back: private, still stored.
    let vs = format!(
        "{VS}layout(location = 0) out float dead;\nlayout(location = 1) out float v;\n\
         void main() {{ dead = in0 * 3.0; v = dead + 1.0; gl_Position = vec4(in0); }}\n"
    );
    let fs = format!("{FS}layout(location = 1) in float v;\nvoid main() {{ o = vec4(v); }}\n");
    let r = glsl_picture(&vs, &fs, Level::Full);
    assert_eq!(r.removed_dead, vec![0], "{r:?}");
}

/// One value id stored to two outputs in different blocks is not one value:
/// in a loop `b` keeps the first iteration's, `a` the last one's. They were
/// merged (`b` read `a`).
#[test]
fn a_value_stored_in_other_blocks_is_not_deduplicated() {
    let vs = format!(
        "{VS}layout(location = 0) out float a;\nlayout(location = 1) out float b;\n\
         void main() {{ gl_Position = vec4(in0); for (int i = 0; i < 3; i++) {{ float x = in0 * float(i + 1); a = x; if (i == 0) {{ b = x; }} }} }}\n"
    );
    let fs = format!(
        "{FS}layout(location = 0) in float a;\nlayout(location = 1) in float b;\nvoid main() {{ o = vec4(a, b, 0, 1); }}\n"
    );
    for level in [Level::Safe, Level::Full] {
        let r = optimized_picture(&vs, &fs, level);
        assert!(r.deduplicated.is_empty(), "{r:?}");
    }
    // Control: stored in one block, they are one.
    let one = vs.replace("if (i == 0) { b = x; }", "b = x;");
    let r = optimized_picture(&one, &fs, Level::Safe);
    assert_eq!(r.deduplicated, vec![(1, 0)], "{r:?}");
}

/// What glslang never emits: a dead output with an initializer, read back
/// by the producer. It becomes private with its initializer (it lost it,
/// and the read-back read an undefined value).
#[test]
fn an_initialized_output_read_back_keeps_its_initializer() {
    let vs = "OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint Vertex %main \"main\" %in0 %o0 %o2
OpDecorate %in0 Location 0
OpDecorate %o0 Location 0
OpDecorate %o2 Location 2
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%ptr_in = OpTypePointer Input %float
%ptr_out = OpTypePointer Output %float
%two = OpConstant %float 2
%in0 = OpVariable %ptr_in Input
%o0 = OpVariable %ptr_out Output
%o2 = OpVariable %ptr_out Output %two
%main = OpFunction %void None %fn
%l = OpLabel
%v = OpLoad %float %in0
%init = OpLoad %float %o2
%s = OpFAdd %float %v %init
OpStore %o0 %s
OpReturn
OpFunctionEnd
";
    let fs = format!("{FS}layout(location = 0) in float v;\nvoid main() {{ o = vec4(v); }}\n");
    for level in [Level::Safe, Level::Full] {
        let r = same_picture(&assemble_text(vs).unwrap(), &glsl(&fs, "frag").unwrap(), level);
        assert_eq!(r.removed_dead, vec![2], "{r:?}");
    }
}
