//! Every adjacent stage pair (issue 13, item 4): the pair driver and the
//! per-stage interface rules the pair linker ([`super::link_with`]) asks for.
//!
//! A graphics pipeline's stages form a chain — vertex, [tessellation control,
//! tessellation evaluation], [geometry], fragment — and [`link_stages`] links
//! each adjacent pair with the pair linker, **last pair first**, as the seed
//! (`nir-opt-varyings.md`) orders it: when a pair is linked, the consumer's
//! outputs that its own consumer does not read have already become private,
//! so the values they were computed from are dead, and so are the inputs
//! that only fed them ([`live_inputs`]); the earlier pair then removes the
//! producer's outputs that fed those inputs. One pass back to front carries
//! a dead varying from the fragment shader to the vertex shader.
//!
//! Per stage ([`Stage`]): tessellation control inputs and outputs,
//! tessellation evaluation inputs and geometry inputs are arrays over the
//! patch's or primitive's vertices ([`per_vertex_inputs`],
//! [`per_vertex_outputs`]): their footprint is their element's, and only
//! whole-array constants cross (every vertex stores the same value, which a
//! vertex shader's output constant is). `Patch` variables are not arrays;
//! a tessellation evaluation shader's patch inputs are convergent (the same
//! for the whole patch), so, as nothing is interpolated before a fragment
//! shader, constants and uniform expressions cross into them exactly as into
//! flat fragment inputs. The seed's other rules, applied by the pair linker:
//!
//! - a tessellation control output that the shader reads back ([`reads_back`]:
//!   other invocations' vertices, after a barrier) stays an output even when
//!   the evaluation shader does not read it, and is placed after the outputs
//!   it does read;
//! - a varying indexed with a non-constant slot index ([`indirectly_indexed`];
//!   the vertex index of a per-vertex array does not count) keeps its
//!   location and is neither propagated, merged nor narrowed — it is still
//!   removed whole when the other side does not use it;
//! - transform-feedback outputs are never removed; those the consumer does
//!   not read are placed after the others;
//! - built-ins (position, point size, clip and cull distances, tessellation
//!   levels) carry no `Location` and are never touched.
//!
//! Code motion (`full`) stays between a fragment shader and its producer.

use super::{link_with, Level, LinkEnv, LinkError, Report};
use crate::ir::code;
use crate::MAX_DEPTH;
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{ExecutionModel, Op, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// A graphics stage the linker links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Vertex,
    TessellationControl,
    TessellationEvaluation,
    Geometry,
    Fragment,
}

impl Stage {
    /// Short name, for reports and logs.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Vertex => "vertex",
            Stage::TessellationControl => "tess control",
            Stage::TessellationEvaluation => "tess evaluation",
            Stage::Geometry => "geometry",
            Stage::Fragment => "fragment",
        }
    }

    /// Whether `next` may follow this stage in a pipeline.
    pub fn feeds(self, next: Stage) -> bool {
        use Stage::*;
        matches!(
            (self, next),
            (Vertex, TessellationControl | Geometry | Fragment)
                | (TessellationControl, TessellationEvaluation)
                | (TessellationEvaluation, Geometry | Fragment)
                | (Geometry, Fragment)
        )
    }
}

/// The stage of a module: the execution model its entry points share
/// (`side` names the module in errors).
pub fn stage_of(m: &Module, side: &'static str) -> Result<Stage, LinkError> {
    let mut stage = None;
    for e in &m.entry_points {
        let s = match e.operands.first() {
            Some(Operand::ExecutionModel(ExecutionModel::Vertex)) => Stage::Vertex,
            Some(Operand::ExecutionModel(ExecutionModel::TessellationControl)) => Stage::TessellationControl,
            Some(Operand::ExecutionModel(ExecutionModel::TessellationEvaluation)) => Stage::TessellationEvaluation,
            Some(Operand::ExecutionModel(ExecutionModel::Geometry)) => Stage::Geometry,
            Some(Operand::ExecutionModel(ExecutionModel::Fragment)) => Stage::Fragment,
            _ => return Err(LinkError::Stage(side, "an entry point of no graphics stage the linker links")),
        };
        if stage.is_some_and(|x| x != s) {
            return Err(LinkError::Stage(side, "entry points of several stages"));
        }
        stage = Some(s);
    }
    stage.ok_or(LinkError::NoEntryPoint(side))
}

/// Whether the stage's non-patch inputs are arrays over vertices.
pub(super) fn per_vertex_inputs(stage: Stage) -> bool {
    matches!(stage, Stage::TessellationControl | Stage::TessellationEvaluation | Stage::Geometry)
}

/// Whether the stage's non-patch outputs are arrays over vertices.
pub(super) fn per_vertex_outputs(stage: Stage) -> bool {
    stage == Stage::TessellationControl
}

/// What one pair's link did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairReport {
    pub producer: Stage,
    pub consumer: Stage,
    pub report: Report,
}

/// Links every adjacent pair of `modules` (a pipeline's stages in order),
/// the last pair first; `envs[i]` is what stage `i` may read for uniform
/// propagation (missing entries: nothing). The reports come in linking
/// order. On an error every module is left as it was.
pub fn link_stages(modules: &mut [Module], level: Level, envs: &[LinkEnv]) -> Result<Vec<PairReport>, LinkError> {
    let stages: Vec<Stage> = modules.iter().map(|m| stage_of(m, "stage")).collect::<Result<_, _>>()?;
    if let Some(w) = stages.windows(2).find(|w| !w[0].feeds(w[1])) {
        return Err(LinkError::Order(w[0].name(), w[1].name()));
    }
    let mut work: Vec<Module> = modules.to_vec();
    let none = LinkEnv::default();
    let mut reports = Vec::new();
    for i in (1..work.len()).rev() {
        let (head, tail) = work.split_at_mut(i);
        let env = envs.get(i).unwrap_or(&none);
        let report = link_with(&mut head[i - 1], &mut tail[0], level, env)?;
        reports.push(PairReport { producer: stages[i - 1], consumer: stages[i], report });
    }
    modules.clone_from_slice(&work);
    Ok(reports)
}

/// The global or function variable a pointer is rooted at (through access
/// chains, at most [`MAX_DEPTH`] of them).
fn root_of(defs: &HashMap<Word, &Instruction>, mut ptr: Word) -> Word {
    for _ in 0..MAX_DEPTH {
        match defs.get(&ptr) {
            Some(i) if matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain | Op::PtrAccessChain) => {
                match i.operands.first() {
                    Some(Operand::IdRef(base)) => ptr = *base,
                    _ => break,
                }
            }
            _ => break,
        }
    }
    ptr
}

/// Whether an instruction with a result has an effect beyond its result
/// (calls, atomics, extended instructions of sets other than GLSL.std.450).
fn has_effect(i: &Instruction, glsl: &HashSet<Word>) -> bool {
    match i.class.opcode {
        Op::FunctionCall => true,
        Op::ExtInst => !matches!(i.operands.first(), Some(Operand::IdRef(set)) if glsl.contains(set)),
        // OpAtomicLoad ..= OpAtomicXor, and the later atomics with a result.
        op => {
            (Op::AtomicLoad as u32..=Op::AtomicXor as u32).contains(&(op as u32))
                || matches!(op, Op::AtomicFlagTestAndSet | Op::AtomicFAddEXT | Op::AtomicFMinEXT | Op::AtomicFMaxEXT)
        }
    }
}

/// The input variables whose values reach something the shader does: an
/// output or memory write, a branch, a call, an atomic. A store to a private
/// or function variable counts only when that variable is read by something
/// that counts. Conservative: anything it does not follow keeps its
/// operands alive. A worklist, no recursion.
pub(super) fn live_inputs(m: &Module) -> HashSet<Word> {
    let glsl: HashSet<Word> = m
        .ext_inst_imports
        .iter()
        .filter(|i| matches!(i.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450"))
        .filter_map(|i| i.result_id)
        .collect();
    let defs: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    // The storage class of every variable, global or in a function.
    let classes: HashMap<Word, StorageClass> = m
        .types_global_values
        .iter()
        .chain(code(m))
        .filter(|v| v.class.opcode == Op::Variable)
        .filter_map(|v| match v.operands.first() {
            Some(Operand::StorageClass(c)) => Some((v.result_id?, *c)),
            _ => None,
        })
        .collect();
    let class_of = |var: Word| classes.get(&var).copied();
    let local = |var: Word| matches!(class_of(var), Some(StorageClass::Private | StorageClass::Function));
    // Stores into local variables, by variable.
    let mut stores: HashMap<Word, Vec<&Instruction>> = HashMap::new();
    let mut work: Vec<&Instruction> = Vec::new();
    for i in code(m) {
        match (i.class.opcode, i.result_id) {
            (Op::Store, _) => match i.operands.first() {
                Some(Operand::IdRef(p)) if local(root_of(&defs, *p)) => {
                    stores.entry(root_of(&defs, *p)).or_default().push(i);
                }
                _ => work.push(i),
            },
            (Op::Variable | Op::Label, Some(_)) => {}
            (_, Some(_)) if !has_effect(i, &glsl) => {}
            _ => work.push(i),
        }
    }
    let mut live: HashSet<Word> = HashSet::new();
    while let Some(i) = work.pop() {
        for o in &i.operands {
            let Operand::IdRef(id) = o else { continue };
            if !live.insert(*id) {
                continue;
            }
            if let Some(d) = defs.get(id) {
                work.push(d);
            }
            // A local variable that is read: the stores into it count.
            if let Some(s) = stores.remove(id) {
                work.extend(s);
            }
        }
    }
    m.types_global_values
        .iter()
        .filter(|v| {
            v.class.opcode == Op::Variable && v.operands.first() == Some(&Operand::StorageClass(StorageClass::Input))
        })
        .filter_map(|v| v.result_id)
        .filter(|v| live.contains(v))
        .collect()
}

/// Whether the shader loads from output `var` (a tessellation control
/// shader reading back its vertices' outputs).
pub(super) fn reads_back(m: &Module, var: Word) -> bool {
    let defs: HashMap<Word, &Instruction> = code(m).filter_map(|i| Some((i.result_id?, i))).collect();
    code(m).any(|i| {
        let from = match i.class.opcode {
            Op::Load => i.operands.first(),
            Op::CopyMemory => i.operands.get(1),
            _ => None,
        };
        matches!(from, Some(Operand::IdRef(p)) if root_of(&defs, *p) == var)
    })
}

/// Whether interface variable `var` is indexed with a non-constant slot
/// index: an access chain on it whose index into an array or matrix (the
/// element's, for a per-vertex array: its vertex index does not count) is
/// not a constant.
pub(super) fn indirectly_indexed(m: &Module, var: Word, per_vertex: bool) -> bool {
    let Some(mut ty) = crate::ir::var_type(m, var) else { return false };
    if per_vertex {
        match crate::ir::def(m, ty).map(|t| (t.class.opcode, t.operands.first())) {
            Some((Op::TypeArray, Some(Operand::IdRef(e)))) => ty = *e,
            _ => return false,
        }
    }
    let slotted = crate::ir::def(m, ty).is_some_and(|t| matches!(t.class.opcode, Op::TypeArray | Op::TypeMatrix));
    if !slotted {
        return false;
    }
    let slot = usize::from(per_vertex) + 1;
    code(m).any(|i| {
        matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
            && i.operands.first() == Some(&Operand::IdRef(var))
            && matches!(i.operands.get(slot), Some(Operand::IdRef(x)) if !crate::ir::is_constant(m, *x))
    })
}

/// Whether interface variable `v` (an `OpVariable`) is a block (or an
/// array of blocks) whose members carry `Location` decorations.
pub(super) fn member_locations(m: &Module, v: &Instruction) -> bool {
    let mut ty = v.result_type.and_then(|p| crate::ir::pointee_of(m, p)).unwrap_or(0);
    for _ in 0..MAX_DEPTH {
        match crate::ir::def(m, ty).map(|t| (t.class.opcode, t.operands.first())) {
            Some((Op::TypeArray, Some(Operand::IdRef(e)))) => ty = *e,
            _ => break,
        }
    }
    m.annotations.iter().any(|a| {
        a.class.opcode == Op::MemberDecorate
            && a.operands.first() == Some(&Operand::IdRef(ty))
            && a.operands.get(2) == Some(&Operand::Decoration(rspirv::spirv::Decoration::Location))
    })
}

/// The footprint (locations, scalar components) of a structure type (an
/// interface block with its location on the variable): its members', one
/// after the other; `None` for any other type. A structure member is
/// refused (the linker does not walk nested structures).
pub(super) fn block_footprint(m: &Module, ty: Word, side: &'static str) -> Result<Option<(u32, u32)>, LinkError> {
    let Some(t) = crate::ir::def(m, ty).filter(|t| t.class.opcode == Op::TypeStruct) else { return Ok(None) };
    let (mut locations, mut components) = (0u32, 0u32);
    for member in &t.operands {
        let Operand::IdRef(mt) = member else { continue };
        if crate::ir::def(m, *mt).is_some_and(|d| d.class.opcode == Op::TypeStruct) {
            return Err(LinkError::Stage(side, "an interface structure nested in a structure"));
        }
        let (l, c) =
            super::footprint(m, *mt).map_err(|_| LinkError::Stage(side, "an interface block too large or nested"))?;
        locations = locations.saturating_add(l);
        components = components.saturating_add(c);
    }
    Ok(Some((locations, components)))
}

/// A constant of the per-vertex array type of input `var` with `element`
/// (a constant of its element type) for every vertex; `None` when the
/// types do not fit.
pub(super) fn every_vertex(m: &mut Module, var: Word, element: Word) -> Option<Word> {
    let array = crate::ir::var_type(m, var)?;
    let (elem_ty, len) = match crate::ir::def(m, array).map(|t| (t.class.opcode, t.operands.as_slice())) {
        Some((Op::TypeArray, [Operand::IdRef(e), Operand::IdRef(n)])) => (*e, *n),
        _ => return None,
    };
    if crate::ir::def(m, element)?.result_type != Some(elem_ty) {
        return None;
    }
    let n = match crate::ir::def(m, len).map(|c| (c.class.opcode, c.operands.first())) {
        Some((Op::Constant, Some(Operand::LiteralBit32(n)))) if *n <= 1024 => *n as usize,
        _ => return None,
    };
    Some(crate::ir::find_or_add(m, Op::ConstantComposite, Some(array), vec![Operand::IdRef(element); n]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{disassemble, glsl};
    use crate::{assemble, parse, validate, TargetEnv};

    const VERT: &str = "#version 450
layout(location = 0) out vec4 pos_v;
layout(location = 1) out vec4 chain_v;
layout(location = 2) out float k_v;
void main() {
    vec2 p = vec2(float(gl_VertexIndex & 1), float(gl_VertexIndex >> 1)) * 1.5 - 0.75;
    gl_Position = vec4(p, 0.0, 1.0);
    pos_v = vec4(p * 0.5 + 0.5, 0.25, 1.0);
    chain_v = vec4(p, p * 2.0);
    k_v = 0.5;
}
";

    const TESC: &str = "#version 450
layout(vertices = 3) out;
layout(location = 0) in vec4 pos_v[];
layout(location = 1) in vec4 chain_v[];
layout(location = 2) in float k_v[];
layout(location = 0) out vec4 pos_t[];
layout(location = 1) out vec4 chain_t[];
layout(location = 2) out vec4 back_t[];
layout(location = 3) patch out vec4 konst_p;
layout(location = 4) patch out vec4 used_p;
layout(location = 5) patch out vec4 arr_p[2];
void main() {
    int i = gl_InvocationID;
    gl_out[gl_InvocationID].gl_Position = gl_in[i].gl_Position;
    pos_t[gl_InvocationID] = pos_v[i] * k_v[i];
    chain_t[gl_InvocationID] = chain_v[i] + vec4(1.0);
    back_t[gl_InvocationID] = pos_v[i] * 0.25;
    barrier();
    if (i == 0) {
        gl_TessLevelInner[0] = 1.0;
        gl_TessLevelOuter[0] = 1.0;
        gl_TessLevelOuter[1] = 1.0;
        gl_TessLevelOuter[2] = 1.0;
        konst_p = vec4(0.25, 0.5, 0.75, 1.0);
        used_p = back_t[0] + back_t[1] + back_t[2];
        arr_p[0] = vec4(0.125);
        arr_p[1] = pos_v[0];
    }
}
";

    /// `INDEX`: how the evaluation shader indexes the patch array.
    const TESE: &str = "#version 450
layout(triangles, equal_spacing, ccw) in;
layout(location = 0) in vec4 pos_t[];
layout(location = 1) in vec4 chain_t[];
layout(location = 3) patch in vec4 konst_p;
layout(location = 4) patch in vec4 used_p;
layout(location = 5) patch in vec4 arr_p[2];
layout(location = 0) out vec4 color;
layout(location = 1) out vec4 chain_e;
void main() {
    vec3 t = gl_TessCoord;
    gl_Position = t.x * gl_in[0].gl_Position + t.y * gl_in[1].gl_Position + t.z * gl_in[2].gl_Position;
    color = (t.x * pos_t[0] + t.y * pos_t[1] + t.z * pos_t[2]) * konst_p + used_p * 0.1 + arr_p[INDEX];
    chain_e = chain_t[0] + chain_t[1] + chain_t[2];
}
";

    const FRAG: &str = "#version 450
layout(location = 0) in vec4 color;
layout(location = 0) out vec4 o;
void main() { o = clamp(color, 0.0, 1.0); }
";

    /// A geometry shader reading `a` and `d` (the vertex or evaluation
    /// shader's first two outputs, under the names `A`, `D`), with a
    /// per-vertex flat constant `k` when `K`, writing `ca` (read), `e` (not
    /// read) and `cap` (transform feedback only, when `XFB`).
    fn geom(a: &str, d: &str, k: bool, xfb: bool) -> String {
        let mut s =
            String::from("#version 450\nlayout(triangles) in;\nlayout(triangle_strip, max_vertices = 3) out;\n");
        s += &format!("layout(location = 0) in vec4 {a}[];\nlayout(location = 1) in vec4 {d}[];\n");
        if k {
            s += "layout(location = 2) flat in int k[];\n";
        }
        s += "layout(location = 0) out vec4 ca;\nlayout(location = 1) out vec4 e;\n";
        if xfb {
            s += "layout(xfb_buffer = 0, xfb_offset = 0, location = 2) out vec4 cap;\n";
        }
        s += "void main() {\n    for (int i = 0; i < 3; i++) {\n        gl_Position = gl_in[i].gl_Position;\n";
        let scale = if k { "float(k[i]) * 0.5" } else { "1.0" };
        s += &format!("        ca = {a}[i] * {scale};\n        e = {d}[i];\n");
        if xfb {
            s += &format!("        cap = {a}[i];\n");
        }
        s += "        EmitVertex();\n    }\n    EndPrimitive();\n}\n";
        s
    }

    const VERT_GS: &str = "#version 450
layout(location = 0) out vec4 a;
layout(location = 1) out vec4 d;
layout(location = 2) flat out int k;
void main() {
    vec2 p = vec2(float(gl_VertexIndex & 1), float(gl_VertexIndex >> 1)) * 1.5 - 0.75;
    gl_Position = vec4(p, 0.0, 1.0);
    a = vec4(p * 0.5 + 0.5, 0.25, 1.0);
    d = a.yxzw;
    k = 2;
}
";

    fn compile(sources: &[(&str, &str)]) -> Vec<Module> {
        sources.iter().map(|(src, st)| parse(&glsl(src, st).unwrap_or_else(|e| panic!("{st}: {e}"))).unwrap()).collect()
    }

    /// Every module validates and every adjacent interface matches,
    /// location by location and component by component.
    fn checked(modules: &[Module]) {
        for m in modules {
            let w = assemble(m);
            validate(&w, TargetEnv::Vulkan1_1).unwrap_or_else(|e| panic!("{e}\n{}", disassemble(&w)));
        }
        for w in modules.windows(2) {
            super::super::tests::interface_matches(&w[0], &w[1]);
        }
    }

    fn linked(sources: &[(&str, &str)], level: Level) -> Vec<PairReport> {
        let mut modules = compile(sources);
        let reports = link_stages(&mut modules, level, &[]).unwrap();
        checked(&modules);
        reports
    }

    fn tessellation(index: &str) -> Vec<(String, &'static str)> {
        vec![
            (VERT.to_string(), "vert"),
            (TESC.to_string(), "tesc"),
            (TESE.replace("INDEX", index), "tese"),
            (FRAG.to_string(), "frag"),
        ]
    }

    fn refs<'a>(v: &'a [(String, &'static str)]) -> Vec<(&'a str, &'static str)> {
        v.iter().map(|(s, st)| (s.as_str(), *st)).collect()
    }

    #[test]
    fn tessellation_pairs_are_linked_last_pair_first() {
        let src = tessellation("int(t.x > 0.5)");
        let r = linked(&refs(&src), Level::Safe);
        let stages: Vec<(Stage, Stage)> = r.iter().map(|p| (p.producer, p.consumer)).collect();
        use Stage::*;
        assert_eq!(
            stages,
            vec![
                (TessellationEvaluation, Fragment),
                (TessellationControl, TessellationEvaluation),
                (Vertex, TessellationControl)
            ]
        );
        // TES → FS: chain_e is not read.
        assert_eq!(r[0].report.removed_dead, vec![1], "{:?}", r[0].report);
        assert_eq!((r[0].report.locations_before, r[0].report.locations_after), (2, 1));
        // TCS → TES: chain_t only fed chain_e (now dead); back_t is read back
        // by the TCS (kept, placed last); konst_p is a constant patch
        // varying (propagated); arr_p is indexed indirectly (kept in place).
        let t = &r[1].report;
        assert_eq!(t.unused_inputs, vec![1], "{t:?}");
        assert_eq!(t.removed_dead, vec![1], "{t:?}");
        assert_eq!(t.read_back, vec![2], "{t:?}");
        assert_eq!(t.propagated_constants, vec![3], "{t:?}");
        assert_eq!(t.kept_in_place, vec![5], "{t:?}");
        assert_eq!(t.placed_last, vec![(2, 2)], "{t:?}");
        assert!(!t.relocated.iter().any(|(from, _)| *from == 5), "{t:?}");
        assert_eq!((t.locations_before, t.locations_after), (7, 5), "{t:?}");
        // VS → TCS: chain_v dies with chain_t; k_v is the same constant for
        // every vertex (propagated into the per-vertex array).
        let v = &r[2].report;
        assert_eq!(v.unused_inputs, vec![1], "{v:?}");
        assert_eq!(v.removed_dead, vec![1], "{v:?}");
        assert_eq!(v.propagated_constants, vec![2], "{v:?}");
        assert_eq!((v.locations_before, v.locations_after), (3, 1), "{v:?}");
    }

    /// The controls: linked first pair first, chain_v survives (it only
    /// dies once the later pairs have been linked); a constant index into
    /// arr_p lets it move (split, its unread element dies); the output not
    /// read back is the one removed.
    #[test]
    fn controls_first_pair_first_and_constant_index() {
        let src = tessellation("int(t.x > 0.5)");
        let mut m = compile(&refs(&src));
        let first = link_with_pair(&mut m, 0);
        assert!(first.removed_dead.is_empty() && first.unused_inputs.is_empty(), "{first:?}");
        let src = tessellation("1");
        let r = linked(&refs(&src), Level::Safe);
        let t = &r[1].report;
        assert!(t.kept_in_place.is_empty(), "{t:?}");
        // (Split into its elements: the unread one dies, the read one moves.)
        assert_eq!(t.split_arrays, vec![5], "{t:?}");
        assert!(t.removed_dead.contains(&5), "{t:?}");
        assert!(t.relocated.iter().any(|(from, _)| *from == 6), "{t:?}");
    }

    fn link_with_pair(m: &mut [Module], i: usize) -> Report {
        let (a, b) = m.split_at_mut(i + 1);
        link_with(&mut a[i], &mut b[0], Level::Safe, &LinkEnv::default()).unwrap()
    }

    #[test]
    fn geometry_pairs_keep_transform_feedback_last() {
        let gs = geom("a", "d", true, true);
        let r = linked(&[(VERT_GS, "vert"), (&gs, "geom"), (FRAG, "frag")], Level::Safe);
        // GS → FS: e dead; cap captured (kept) and placed after color.
        let g = &r[0].report;
        assert_eq!(g.removed_dead, vec![1], "{g:?}");
        assert_eq!(g.placed_last, vec![(2, 1)], "{g:?}");
        assert_eq!((g.locations_before, g.locations_after), (3, 2), "{g:?}");
        // VS → GS: d fed only e; k is a flat constant for every vertex.
        let v = &r[1].report;
        assert_eq!(v.removed_dead, vec![1], "{v:?}");
        assert_eq!(v.propagated_constants, vec![2], "{v:?}");
        assert_eq!((v.locations_before, v.locations_after), (3, 1), "{v:?}");
        // Control: without transform feedback, cap is not declared and
        // nothing is placed last.
        let gs = geom("a", "d", true, false);
        let r = linked(&[(VERT_GS, "vert"), (&gs, "geom"), (FRAG, "frag")], Level::Safe);
        assert!(r[0].report.placed_last.is_empty(), "{:?}", r[0].report);
    }

    #[test]
    fn five_stages_carry_a_dead_varying_back_to_the_vertex_shader() {
        let tese = TESE.replace("INDEX", "int(t.x > 0.5)");
        let gs = geom("color", "chain_e", false, false);
        let r = linked(&[(VERT, "vert"), (TESC, "tesc"), (&tese, "tese"), (&gs, "geom"), (FRAG, "frag")], Level::Full);
        assert_eq!(r.len(), 4);
        for (p, dead) in r.iter().zip([vec![1], vec![1], vec![1], vec![1]]) {
            assert_eq!(p.report.removed_dead, dead, "{:?} -> {:?}: {:?}", p.producer, p.consumer, p.report);
        }
    }

    /// A block with its location on the variable spans its members'
    /// locations (a vec4 and a vec2: two), so nothing is placed inside it;
    /// a block with locations on its members is not linked at all (an
    /// error, both modules as they were).
    #[test]
    fn interface_blocks_keep_their_footprint() {
        let vs = "#version 450
layout(location = 0) out VS_OUT { vec4 a; vec2 b; } vs_out;
layout(location = 3) out vec4 c;
layout(location = 5) out vec4 d;
void main() { vs_out.a = vec4(1); vs_out.b = vec2(float(gl_VertexIndex)); c = vec4(3); d = vec4(gl_VertexIndex); gl_Position = vec4(0); }
";
        let fs = "#version 450
layout(location = 0) in VS_OUT { vec4 a; vec2 b; } vs_in;
layout(location = 5) in vec4 d;
layout(location = 0) out vec4 o;
void main() { o = vs_in.a + vec4(vs_in.b, 0, 0) + d; }
";
        let r = linked(&[(vs, "vert"), (fs, "frag")], Level::Safe);
        let r = &r[0].report;
        assert_eq!(r.removed_dead, vec![3], "{r:?}");
        assert_eq!(r.relocated, vec![(5, 2)], "{r:?}");
        assert_eq!((r.locations_before, r.locations_after), (4, 3), "{r:?}");
        let vs = "#version 450
out Blk { layout(location = 5) vec4 d; } b;
layout(location = 0) out vec4 a;
void main() { b.d = vec4(1); a = vec4(2); gl_Position = vec4(0); }
";
        let fs = "#version 450
in Blk { layout(location = 5) vec4 d; } b;
layout(location = 0) out vec4 o;
void main() { o = b.d; }
";
        let mut m = compile(&[(vs, "vert"), (fs, "frag")]);
        let before: Vec<Vec<u32>> = m.iter().map(assemble).collect();
        assert!(matches!(link_stages(&mut m, Level::Safe, &[]), Err(LinkError::Stage(..))));
        assert_eq!(m.iter().map(assemble).collect::<Vec<_>>(), before);
    }

    #[test]
    fn a_wrong_stage_order_is_an_error_and_changes_nothing() {
        let mut m = compile(&[(FRAG, "frag"), (VERT_GS, "vert")]);
        let before: Vec<Vec<u32>> = m.iter().map(assemble).collect();
        assert_eq!(link_stages(&mut m, Level::Safe, &[]), Err(LinkError::Order("fragment", "vertex")));
        assert_eq!(m.iter().map(assemble).collect::<Vec<_>>(), before);
    }

    /// An input read only into a private variable nobody reads is dead; one
    /// read into a branch condition is not.
    #[test]
    fn live_inputs_follow_values_to_what_the_shader_does() {
        let fs = "#version 450
layout(location = 0) in vec4 a;
layout(location = 1) in vec4 b;
layout(location = 2) flat in int c;
layout(location = 0) out vec4 o;
vec4 unused;
void main() { unused = a * 2.0; if (c > 0) { o = vec4(1.0); } else { o = b; } }
";
        let m = parse(&glsl(fs, "frag").unwrap()).unwrap();
        let live = live_inputs(&m);
        let id = |name: &str| {
            m.debug_names
                .iter()
                .find(|n| matches!(n.operands.get(1), Some(Operand::LiteralString(s)) if s == name))
                .and_then(|n| match n.operands.first() {
                    Some(Operand::IdRef(x)) => Some(*x),
                    _ => None,
                })
                .unwrap()
        };
        assert!(!live.contains(&id("a")) && live.contains(&id("b")) && live.contains(&id("c")), "{live:?}");
    }
}
