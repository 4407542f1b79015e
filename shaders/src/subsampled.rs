//! Subsampled images read through their bin table (`VK_IMAGE_CREATE_SUBSAMPLED_BIT_EXT`).
//!
//! The layer may store a density-map pass's colour attachment *packed*:
//! the texels its scratch targets rendered, 1:1, where their bins are —
//! pixel `p` of a rectangle rendered at fragment area `a` lives at texel
//! `⌊p / a⌋ + o` (`o = origin − origin / a`, the rectangle's origin a
//! multiple of `a`), so nothing is written at full resolution. A per-image
//! uniform texel buffer (`R32_UINT`), the *bin table*, says so per cell of the image
//! (`cell` pixels): one word, bits 0–1 `log2 ax`, 2–3 `log2 ay`, 4–17 `ox`,
//! 18–31 `oy`; zero is the identity (an image stored at full resolution).
//!
//! Such an image is read only through combined image samplers whose
//! immutable sampler is subsampled (clamped, one level, no offsets, no
//! comparison, no gathers), so every read is an `OpImageSample*Lod` of a
//! binding the pipeline layout names. This pass rewrites those: the
//! coordinate `uv` becomes the pixel `p = uv · size`, each pixel the sample
//! needs is looked up in the table of the hidden binding the layer added
//! beside the sampler's, and the sample reads that pixel's texel at its
//! centre. A nearest sampler needs one pixel; a linear one the four the
//! filter weighs, sampled one by one and blended with the filter's weights
//! (the reconstruction of the full-resolution image, then its filtering);
//! where an axis clamps to the border, a pixel outside the image is sampled
//! where it is (the sampler gives the border colour).

use crate::ir::{
    add_capability, add_to_interface, constant, decorate, decoration_value, def, find_or_add, fresh, lists_all_globals,
    passed_to_function, pointee_of, pointer_type,
};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{Capability, Decoration, Dim, ImageFormat, ImageOperands, Op, StorageClass, Word};
use std::collections::HashMap;

/// A combined image sampler binding whose immutable sampler is subsampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    pub set: u32,
    pub binding: u32,
    /// The hidden uniform texel buffer binding (same set) holding the table of
    /// the image the application writes to `binding`.
    pub table: u32,
    /// The sampler filters linearly (min and mag filters are equal for a
    /// subsampled sampler).
    pub linear: bool,
    /// Per axis (u, v): the sampler clamps to the border colour, not to the edge.
    pub border: (bool, bool),
}

/// What the rewrite needs: the subsampled bindings and the table's cell size.
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    pub bindings: &'a [Binding],
    pub cell: (u32, u32),
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Sample instructions rewritten.
    pub samples: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    #[error("a subsampled binding is an array of samplers")]
    Array,
    #[error("a subsampled sampler is passed to a function")]
    PassedToFunction,
    #[error("{0:?} reads a subsampled image")]
    Instruction(Op),
    #[error("a subsampled image is sampled with an offset")]
    Offset,
    #[error("a subsampled binding's image type is not 2D and single-sampled")]
    NotTwoDimensional,
    #[error("malformed module: {0}")]
    Malformed(#[from] crate::Malformed),
}

/// Whether SPIR-V `words` declare a combined image sampler type: a scan of
/// the words for `OpTypeSampledImage`, without parsing.
pub fn declares_sampled_images(words: &[u32]) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, op) = ((first >> 16) as usize, first & 0xffff);
        if count == 0 {
            return false;
        }
        if op == Op::TypeSampledImage as u32 {
            return true;
        }
        if op == Op::Function as u32 {
            return false;
        }
        at += count;
    }
    false
}

/// Rewrites every sample of a subsampled binding of `cfg` in `m`; a module
/// with none is left as it is (`samples` 0).
pub fn rewrite(m: &mut Module, cfg: &Config) -> Result<Report, Unsupported> {
    crate::check(m)?;
    let vars = subsampled_variables(m, cfg)?;
    if vars.is_empty() {
        return Ok(Report::default());
    }
    let values = loaded_values(m, &vars)?;
    let sites = sample_sites(m, &values)?;
    if sites.is_empty() {
        return Ok(Report::default());
    }
    add_capability(m, Capability::ImageQuery);
    let glsl = glsl_import(m);
    // The result types of the module's values, once (the sites ask for those of their operands).
    let types: HashMap<Word, Word> = crate::ir::code(m)
        .chain(m.types_global_values.iter())
        .filter_map(|i| Some((i.result_id?, i.result_type?)))
        .collect();
    let mut tables: HashMap<u32, (Word, Word)> = HashMap::new();
    let samples = sites.len();
    // From the last site back, so that the positions of the earlier ones hold.
    for (f, b, i, binding) in sites.into_iter().rev() {
        let table = *tables.entry(binding.table).or_insert_with(|| table_variable(m, binding.set, binding.table));
        let inst = m.functions[f].blocks[b].instructions[i].clone();
        let code = Emit::new(m, &types, glsl, table, cfg.cell).site(&inst, &binding);
        m.functions[f].blocks[b].instructions.splice(i..=i, code);
    }
    Ok(Report { samples })
}

/// The module's `OpVariable`s of the bindings in `cfg`.
fn subsampled_variables(m: &Module, cfg: &Config) -> Result<HashMap<Word, Binding>, Unsupported> {
    let mut out = HashMap::new();
    for v in m.types_global_values.iter().filter(|i| i.class.opcode == Op::Variable) {
        let Some(id) = v.result_id else { continue };
        let (Some(set), Some(binding)) =
            (decoration_value(m, id, Decoration::DescriptorSet), decoration_value(m, id, Decoration::Binding))
        else {
            continue;
        };
        let Some(b) = cfg.bindings.iter().find(|b| b.set == set && b.binding == binding) else { continue };
        let pointee = v.result_type.and_then(|t| pointee_of(m, t)).and_then(|t| def(m, t));
        match pointee.map(|t| t.class.opcode) {
            Some(Op::TypeSampledImage) => {}
            Some(Op::TypeArray | Op::TypeRuntimeArray) => return Err(Unsupported::Array),
            _ => continue,
        }
        // A subsampled image is 2D, single-sampled (VUID-VkImageCreateInfo-flags-02557 and -02558).
        let image = pointee.and_then(|t| match t.operands.first() {
            Some(Operand::IdRef(i)) => def(m, *i),
            _ => None,
        });
        let plain_2d = image.is_some_and(|i| {
            i.operands.get(1) == Some(&Operand::Dim(Dim::Dim2D)) && i.operands.get(4) == Some(&Operand::LiteralBit32(0))
        });
        if !plain_2d {
            return Err(Unsupported::NotTwoDimensional);
        }
        if passed_to_function(m, id) {
            return Err(Unsupported::PassedToFunction);
        }
        out.insert(id, *b);
    }
    Ok(out)
}

/// The values loaded from those variables (and their copies).
fn loaded_values(m: &Module, vars: &HashMap<Word, Binding>) -> Result<HashMap<Word, Binding>, Unsupported> {
    let mut values: HashMap<Word, Binding> = HashMap::new();
    // Copies follow their source in a block, and blocks follow dominance order: one pass in order finds them all.
    for i in crate::ir::code(m) {
        let src = match (i.class.opcode, i.operands.first()) {
            (Op::Load | Op::CopyObject, Some(Operand::IdRef(s))) => *s,
            _ => continue,
        };
        let from = vars.get(&src).or_else(|| values.get(&src)).copied();
        if let (Some(b), Some(id)) = (from, i.result_id) {
            values.insert(id, b);
        }
    }
    if values.keys().any(|v| passed_to_function(m, *v)) {
        return Err(Unsupported::PassedToFunction);
    }
    Ok(values)
}

/// The samples to rewrite: (function, block, instruction, binding); any
/// other read of a subsampled value that is not a size query is refused.
fn sample_sites(
    m: &Module,
    values: &HashMap<Word, Binding>,
) -> Result<Vec<(usize, usize, usize, Binding)>, Unsupported> {
    let mut sites = Vec::new();
    let mut images: Vec<Word> = Vec::new();
    for (f, func) in m.functions.iter().enumerate() {
        for (b, block) in func.blocks.iter().enumerate() {
            for (i, inst) in block.instructions.iter().enumerate() {
                let op = inst.class.opcode;
                let Some(binding) = inst.operands.iter().find_map(|o| match o {
                    Operand::IdRef(id) => values.get(id).copied(),
                    _ => None,
                }) else {
                    continue;
                };
                match op {
                    Op::Load | Op::CopyObject => {}
                    Op::ImageSampleImplicitLod | Op::ImageSampleExplicitLod => {
                        if has_offset(inst) {
                            return Err(Unsupported::Offset);
                        }
                        sites.push((f, b, i, binding));
                    }
                    Op::Image => images.extend(inst.result_id),
                    _ => return Err(Unsupported::Instruction(op)),
                }
            }
        }
    }
    // The image of a subsampled sampler may only be queried.
    for i in crate::ir::code(m) {
        if i.operands.first().is_some_and(|o| matches!(o, Operand::IdRef(id) if images.contains(id)))
            && !matches!(
                i.class.opcode,
                Op::ImageQuerySizeLod | Op::ImageQuerySize | Op::ImageQueryLevels | Op::ImageQuerySamples
            )
        {
            return Err(Unsupported::Instruction(i.class.opcode));
        }
    }
    Ok(sites)
}

fn has_offset(inst: &Instruction) -> bool {
    inst.operands.iter().any(|o| {
        matches!(o, Operand::ImageOperands(f) if f.intersects(
            ImageOperands::OFFSET | ImageOperands::CONST_OFFSET | ImageOperands::CONST_OFFSETS
        ))
    })
}

/// The module's `GLSL.std.450` import, added where missing.
fn glsl_import(m: &mut Module) -> Word {
    let found = m.ext_inst_imports.iter().find_map(|i| match i.operands.first() {
        Some(Operand::LiteralString(s)) if s == "GLSL.std.450" => i.result_id,
        _ => None,
    });
    found.unwrap_or_else(|| {
        let id = fresh(m);
        m.ext_inst_imports.push(Instruction::new(
            Op::ExtInstImport,
            None,
            Some(id),
            vec![Operand::LiteralString("GLSL.std.450".into())],
        ));
        id
    })
}

/// The hidden table binding's variable and its image type: a uniform texel buffer of words
/// (`R32_UINT`), in `set` at `binding` — fetched through the texture path,
/// which llvmpipe gathers for a whole SIMD vector at once (its storage
/// buffer loads go lane by lane: 2.7 ms of a full-HD post pass).
fn table_variable(m: &mut Module, set: u32, binding: u32) -> (Word, Word) {
    let u32_ = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)]);
    add_capability(m, Capability::SampledBuffer);
    let image = find_or_add(
        m,
        Op::TypeImage,
        None,
        vec![
            Operand::IdRef(u32_),
            Operand::Dim(Dim::DimBuffer),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(0),
            Operand::LiteralBit32(1),
            Operand::ImageFormat(ImageFormat::Unknown),
        ],
    );
    let ptr = pointer_type(m, StorageClass::UniformConstant, image);
    let var = fresh(m);
    m.types_global_values.push(Instruction::new(
        Op::Variable,
        Some(ptr),
        Some(var),
        vec![Operand::StorageClass(StorageClass::UniformConstant)],
    ));
    decorate(m, var, Decoration::DescriptorSet, vec![Operand::LiteralBit32(set)]);
    decorate(m, var, Decoration::Binding, vec![Operand::LiteralBit32(binding)]);
    if lists_all_globals(m) {
        add_to_interface(m, var);
    }
    (var, image)
}

/// GLSL.std.450 instruction numbers.
const FLOOR: u32 = 8;
const SCLAMP: u32 = 45;

/// The code of one rewritten sample.
struct Emit<'m> {
    m: &'m mut Module,
    /// The result types of the module's values before the rewrite.
    types: &'m HashMap<Word, Word>,
    code: Vec<Instruction>,
    glsl: Word,
    /// The table's variable and image type.
    table: (Word, Word),
    cell: (u32, u32),
    t: Types,
}

#[derive(Clone, Copy)]
struct Types {
    f32_: Word,
    vec2: Word,
    i32_: Word,
    ivec2: Word,
    u32_: Word,
    uvec2: Word,
    bvec2: Word,
}

impl<'m> Emit<'m> {
    fn new(
        m: &'m mut Module,
        types: &'m HashMap<Word, Word>,
        glsl: Word,
        table: (Word, Word),
        cell: (u32, u32),
    ) -> Self {
        let f32_ = find_or_add(m, Op::TypeFloat, None, vec![Operand::LiteralBit32(32)]);
        let i32_ = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(1)]);
        let u32_ = find_or_add(m, Op::TypeInt, None, vec![Operand::LiteralBit32(32), Operand::LiteralBit32(0)]);
        let bool_ = find_or_add(m, Op::TypeBool, None, vec![]);
        let vec =
            |m: &mut Module, c| find_or_add(m, Op::TypeVector, None, vec![Operand::IdRef(c), Operand::LiteralBit32(2)]);
        let t = Types {
            f32_,
            vec2: vec(m, f32_),
            i32_,
            ivec2: vec(m, i32_),
            u32_,
            uvec2: vec(m, u32_),
            bvec2: vec(m, bool_),
        };
        Emit { m, types, code: Vec::new(), glsl, table, cell, t }
    }

    /// Appends `op` with result type `ty` and a fresh result id.
    fn op(&mut self, op: Op, ty: Word, operands: &[Word]) -> Word {
        let id = fresh(self.m);
        self.code.push(Instruction::new(op, Some(ty), Some(id), operands.iter().map(|w| Operand::IdRef(*w)).collect()));
        id
    }

    fn ext(&mut self, ty: Word, which: u32, args: &[Word]) -> Word {
        let id = fresh(self.m);
        let mut operands = vec![Operand::IdRef(self.glsl), Operand::LiteralExtInstInteger(which)];
        operands.extend(args.iter().map(|w| Operand::IdRef(*w)));
        self.code.push(Instruction::new(Op::ExtInst, Some(ty), Some(id), operands));
        id
    }

    fn shuffle(&mut self, ty: Word, a: Word, b: Word, which: &[u32]) -> Word {
        let id = fresh(self.m);
        let mut operands = vec![Operand::IdRef(a), Operand::IdRef(b)];
        operands.extend(which.iter().map(|c| Operand::LiteralBit32(*c)));
        self.code.push(Instruction::new(Op::VectorShuffle, Some(ty), Some(id), operands));
        id
    }

    fn extract(&mut self, ty: Word, v: Word, c: u32) -> Word {
        let id = fresh(self.m);
        self.code.push(Instruction::new(
            Op::CompositeExtract,
            Some(ty),
            Some(id),
            vec![Operand::IdRef(v), Operand::LiteralBit32(c)],
        ));
        id
    }

    fn int(&mut self, v: i32) -> Word {
        constant(self.m, self.t.i32_, v as u32)
    }

    fn uint(&mut self, v: u32) -> Word {
        constant(self.m, self.t.u32_, v)
    }

    fn composite(&mut self, ty: Word, parts: [Word; 2]) -> Word {
        find_or_add(self.m, Op::ConstantComposite, Some(ty), parts.iter().map(|p| Operand::IdRef(*p)).collect())
    }

    fn ivec2(&mut self, x: i32, y: i32) -> Word {
        let (a, b) = (self.int(x), self.int(y));
        self.composite(self.t.ivec2, [a, b])
    }

    fn vec2(&mut self, x: f32, y: f32) -> Word {
        let (a, b) = (constant(self.m, self.t.f32_, x.to_bits()), constant(self.m, self.t.f32_, y.to_bits()));
        self.composite(self.t.vec2, [a, b])
    }

    fn bvec2(&mut self, x: bool, y: bool) -> Word {
        let b = find_or_add(self.m, Op::TypeBool, None, vec![]);
        let c = |v: bool| if v { Op::ConstantTrue } else { Op::ConstantFalse };
        let (a, bb) = (find_or_add(self.m, c(x), Some(b), vec![]), find_or_add(self.m, c(y), Some(b), vec![]));
        self.composite(self.t.bvec2, [a, bb])
    }

    /// The code replacing sample `inst` of `binding`: its result id defined
    /// last, by the sample of the looked-up texel(s).
    fn site(mut self, inst: &Instruction, binding: &Binding) -> Vec<Instruction> {
        let t = self.t;
        let (Some(Operand::IdRef(sampled)), Some(Operand::IdRef(coord))) =
            (inst.operands.first(), inst.operands.get(1))
        else {
            return vec![inst.clone()];
        };
        let (sampled, coord) = (*sampled, *coord);
        let Some((image_ty, arrayed)) = self.image_type(sampled) else { return vec![inst.clone()] };
        let coord_n = self.components(coord);
        let result_ty = inst.result_type.unwrap_or(0);
        let float_result = self.is_float_vec4(result_ty);
        // The image's size, the pixel `p` the coordinate names.
        let image = self.op(Op::Image, image_ty, &[sampled]);
        let zero = self.int(0);
        let size = if arrayed {
            let ivec3 =
                find_or_add(self.m, Op::TypeVector, None, vec![Operand::IdRef(t.i32_), Operand::LiteralBit32(3)]);
            let s3 = self.op(Op::ImageQuerySizeLod, ivec3, &[image, zero]);
            self.shuffle(t.ivec2, s3, s3, &[0, 1])
        } else {
            self.op(Op::ImageQuerySizeLod, t.ivec2, &[image, zero])
        };
        let size_f = self.op(Op::ConvertSToF, t.vec2, &[size]);
        let uv = if coord_n == 2 { coord } else { self.shuffle(t.vec2, coord, coord, &[0, 1]) };
        let p = self.op(Op::FMul, t.vec2, &[uv, size_f]);
        let one = self.ivec2(1, 1);
        let last = self.op(Op::ISub, t.ivec2, &[size, one]);
        let (cw, ch) = (self.cell.0 as i32, self.cell.1 as i32);
        let sx = self.extract(t.i32_, size, 0);
        let cw_1 = self.int(cw - 1);
        let cw_log = self.int(cw.trailing_zeros() as i32);
        let wide = self.op(Op::IAdd, t.i32_, &[sx, cw_1]);
        let cols = self.op(Op::ShiftRightArithmetic, t.i32_, &[wide, cw_log]);
        let ctx = Site { size, size_f, last, cols, cell: (cw, ch), border: binding.border };
        // Clamped to the edge on both axes, not layered: fetched, not sampled (the same texels, nearest or
        // filtered by hand).
        let fetched = !arrayed && !binding.border.0 && !binding.border.1;
        if !(binding.linear && float_result) {
            let fl = self.ext(t.vec2, FLOOR, &[p]);
            let pi = self.op(Op::ConvertFToS, t.ivec2, &[fl]);
            if fetched {
                self.fetch(&ctx, (image, pi), result_ty, inst.result_id);
                return self.code;
            }
            let c = self.texel_coord(&ctx, pi);
            let new = self.rebuilt(coord, coord_n, c);
            let mut s = inst.clone();
            s.operands[1] = Operand::IdRef(new);
            self.code.push(s);
            return self.code;
        }
        // Linear: the four pixels around `p − 0.5`, blended by the filter's weights.
        let half = self.vec2(0.5, 0.5);
        let b = self.op(Op::FSub, t.vec2, &[p, half]);
        let fb = self.ext(t.vec2, FLOOR, &[b]);
        let fr = self.op(Op::FSub, t.vec2, &[b, fb]);
        let i0 = self.op(Op::ConvertFToS, t.ivec2, &[fb]);
        let i1 = self.op(Op::IAdd, t.ivec2, &[i0, one]);
        let (x0, y0) = (self.extract(t.i32_, i0, 0), self.extract(t.i32_, i0, 1));
        let (x1, y1) = (self.extract(t.i32_, i1, 0), self.extract(t.i32_, i1, 1));
        let mut taps = [0; 4];
        for (k, (x, y)) in [(x0, y0), (x1, y0), (x0, y1), (x1, y1)].into_iter().enumerate() {
            let pi = self.op(Op::CompositeConstruct, t.ivec2, &[x, y]);
            if fetched {
                taps[k] = self.fetch(&ctx, (image, pi), result_ty, None);
                continue;
            }
            let c = self.texel_coord(&ctx, pi);
            let new = self.rebuilt(coord, coord_n, c);
            let mut s = inst.clone();
            s.operands[1] = Operand::IdRef(new);
            let id = fresh(self.m);
            s.result_id = Some(id);
            self.code.push(s);
            taps[k] = id;
        }
        let (fx, fy) = (self.extract(t.f32_, fr, 0), self.extract(t.f32_, fr, 1));
        let lerp = |e: &mut Self, a: Word, b: Word, w: Word| {
            let d = e.op(Op::FSub, result_ty, &[b, a]);
            let s = e.op(Op::VectorTimesScalar, result_ty, &[d, w]);
            e.op(Op::FAdd, result_ty, &[a, s])
        };
        let top = lerp(&mut self, taps[0], taps[1], fx);
        let bottom = lerp(&mut self, taps[2], taps[3], fx);
        let d = self.op(Op::FSub, result_ty, &[bottom, top]);
        let s = self.op(Op::VectorTimesScalar, result_ty, &[d, fy]);
        self.code.push(Instruction::new(
            Op::FAdd,
            Some(result_ty),
            inst.result_id,
            vec![Operand::IdRef(top), Operand::IdRef(s)],
        ));
        self.code
    }

    /// Pixel `pi` clamped to the image, and the texel holding it in the
    /// packed image (`uvec2`): `⌊p / a⌋ + o` by its cell's table word.
    fn packed_texel(&mut self, s: &Site, pi: Word) -> (Word, Word) {
        let t = self.t;
        let origin = self.ivec2(0, 0);
        let clamped = self.ext(t.ivec2, SCLAMP, &[pi, origin, s.last]);
        // The cell is a power of two: a shift.
        let shift = self.ivec2(s.cell.0.trailing_zeros() as i32, s.cell.1.trailing_zeros() as i32);
        let at = self.op(Op::ShiftRightArithmetic, t.ivec2, &[clamped, shift]);
        let (cx, cy) = (self.extract(t.i32_, at, 0), self.extract(t.i32_, at, 1));
        let row = self.op(Op::IMul, t.i32_, &[cy, s.cols]);
        let index = self.op(Op::IAdd, t.i32_, &[row, cx]);
        let table = self.op(Op::Load, self.table.1, &[self.table.0]);
        let uvec4 = find_or_add(self.m, Op::TypeVector, None, vec![Operand::IdRef(t.u32_), Operand::LiteralBit32(4)]);
        let texel = self.op(Op::ImageFetch, uvec4, &[table, index]);
        let e = self.extract(t.u32_, texel, 0);
        let field = |me: &mut Self, shift: u32, mask: u32| {
            let sh = me.uint(shift);
            let moved = me.op(Op::ShiftRightLogical, t.u32_, &[e, sh]);
            let m = me.uint(mask);
            me.op(Op::BitwiseAnd, t.u32_, &[moved, m])
        };
        let ax = field(self, 0, 3);
        let ay = field(self, 2, 3);
        let ox = field(self, 4, 0x3fff);
        let oy = field(self, 18, 0x3fff);
        let shifts = self.op(Op::CompositeConstruct, t.uvec2, &[ax, ay]);
        let offset = self.op(Op::CompositeConstruct, t.uvec2, &[ox, oy]);
        let pu = self.op(Op::Bitcast, t.uvec2, &[clamped]);
        let scaled = self.op(Op::ShiftRightLogical, t.uvec2, &[pu, shifts]);
        (clamped, self.op(Op::IAdd, t.uvec2, &[scaled, offset]))
    }

    /// The normalized coordinate to sample pixel `pi` at: the centre of its
    /// texel `q` in the packed image, or, on an axis that clamps to the
    /// border, the pixel's own centre where it lies outside the image.
    fn texel_coord(&mut self, s: &Site, pi: Word) -> Word {
        let t = self.t;
        let (_, q) = self.packed_texel(s, pi);
        let qf = self.op(Op::ConvertUToF, t.vec2, &[q]);
        let half = self.vec2(0.5, 0.5);
        let centre = self.op(Op::FAdd, t.vec2, &[qf, half]);
        let packed = self.op(Op::FDiv, t.vec2, &[centre, s.size_f]);
        if !(s.border.0 || s.border.1) {
            return packed;
        }
        let origin = self.ivec2(0, 0);
        let below = self.op(Op::SLessThan, t.bvec2, &[pi, origin]);
        let above = self.op(Op::SGreaterThanEqual, t.bvec2, &[pi, s.size]);
        let outside = self.op(Op::LogicalOr, t.bvec2, &[below, above]);
        let axes = self.bvec2(s.border.0, s.border.1);
        let keep = self.op(Op::LogicalAnd, t.bvec2, &[outside, axes]);
        let pf = self.op(Op::ConvertSToF, t.vec2, &[pi]);
        let own = self.op(Op::FAdd, t.vec2, &[pf, half]);
        let own_uv = self.op(Op::FDiv, t.vec2, &[own, s.size_f]);
        self.op(Op::Select, t.vec2, &[keep, own_uv, packed])
    }

    /// The texel of pixel `pi` fetched from the packed image (`image`), as
    /// `result_ty`, with result id `id` (fresh where `None`): what a nearest
    /// sample at its centre returns, without the sampler's work.
    fn fetch(&mut self, s: &Site, (image, pi): (Word, Word), result_ty: Word, id: Option<Word>) -> Word {
        let t = self.t;
        let (_, q) = self.packed_texel(s, pi);
        let qi = self.op(Op::Bitcast, t.ivec2, &[q]);
        let zero = self.int(0);
        let id = id.unwrap_or_else(|| fresh(self.m));
        self.code.push(Instruction::new(
            Op::ImageFetch,
            Some(result_ty),
            Some(id),
            vec![
                Operand::IdRef(image),
                Operand::IdRef(qi),
                Operand::ImageOperands(ImageOperands::LOD),
                Operand::IdRef(zero),
            ],
        ));
        id
    }

    /// `coord` (`n` components) with its first two replaced by `xy`.
    fn rebuilt(&mut self, coord: Word, n: u32, xy: Word) -> Word {
        if n == 2 {
            return xy;
        }
        let ty = self.value_type(coord).unwrap_or(self.t.vec2);
        let mut which = vec![0, 1];
        which.extend((2..n).map(|k| 2 + k));
        self.shuffle(ty, xy, coord, &which)
    }

    /// The image type of sampled image value `v`, and whether it is arrayed.
    fn image_type(&self, v: Word) -> Option<(Word, bool)> {
        let sampled_ty = self.value_type(v)?;
        let si = def(self.m, sampled_ty)?;
        let Some(Operand::IdRef(image_ty)) = si.operands.first() else { return None };
        let img = def(self.m, *image_ty)?;
        let arrayed = matches!(img.operands.get(3), Some(Operand::LiteralBit32(1)));
        Some((*image_ty, arrayed))
    }

    /// The type of value `v` (a function-local result or a global of the module as it was).
    fn value_type(&self, v: Word) -> Option<Word> {
        self.types.get(&v).copied()
    }

    /// Components of float vector value `v` (1 for a scalar).
    fn components(&self, v: Word) -> u32 {
        self.value_type(v)
            .and_then(|t| def(self.m, t))
            .and_then(|d| match (d.class.opcode, d.operands.get(1)) {
                (Op::TypeVector, Some(Operand::LiteralBit32(n))) => Some(*n),
                _ => None,
            })
            .unwrap_or(1)
    }

    fn is_float_vec4(&self, ty: Word) -> bool {
        let Some(d) = def(self.m, ty) else { return false };
        match (d.class.opcode, d.operands.first()) {
            (Op::TypeVector, Some(Operand::IdRef(c))) => {
                def(self.m, *c).is_some_and(|c| c.class.opcode == Op::TypeFloat)
            }
            _ => false,
        }
    }
}

/// What every pixel lookup of one sample shares.
struct Site {
    size: Word,
    size_f: Word,
    /// The last pixel: `size − 1`.
    last: Word,
    /// Table columns: `⌈size.x / cell.x⌉`.
    cols: Word,
    cell: (i32, i32),
    border: (bool, bool),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::glsl;
    use crate::{assemble, parse, validate, TargetEnv};

    const POST: &str = r#"#version 450
layout(set = 0, binding = 1) uniform sampler2D scene;
layout(set = 0, binding = 2) uniform sampler2D other;
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 colour;
void main() { colour = texture(scene, uv) + textureLod(other, uv, 0.0); }
"#;

    fn config(linear: bool, border: (bool, bool)) -> [Binding; 1] {
        [Binding { set: 0, binding: 1, table: 7, linear, border }]
    }

    #[test]
    fn samples_of_a_subsampled_binding_read_through_its_table() {
        let cases = [
            (false, (false, false), 1, "vulkan1.0", TargetEnv::Vulkan1_0),
            (true, (false, false), 4, "vulkan1.1", TargetEnv::Vulkan1_1),
            (true, (true, false), 4, "vulkan1.2", TargetEnv::Vulkan1_2),
            (false, (false, true), 1, "vulkan1.1", TargetEnv::Vulkan1_1),
        ];
        for (linear, border, samples, env, target) in cases {
            let mut m = parse(&crate::testing::glsl_for(POST, "frag", env).unwrap()).unwrap();
            let b = config(linear, border);
            let r = rewrite(&mut m, &Config { bindings: &b, cell: (8, 8) }).unwrap();
            assert_eq!(r.samples, 1);
            let words = assemble(&m);
            validate(&words, target).unwrap();
            let text = crate::testing::disassemble(&words);
            // The other binding's sample and this one's taps: fetched where both axes clamp to the edge.
            let (sampled, fetched) = if border == (false, false) { (1, samples) } else { (1 + samples, 0) };
            assert_eq!(text.matches("OpImageSample").count(), sampled, "{text}");
            // And a fetch of the table's word per tap.
            assert_eq!(text.matches("OpImageFetch").count(), fetched + samples, "{text}");
            assert!(text.contains("OpDecorate %") && text.contains("Binding 7"), "{text}");
        }
    }

    #[test]
    fn a_module_without_the_binding_is_left_alone() {
        let mut m = parse(&glsl(POST, "frag").unwrap()).unwrap();
        let before = assemble(&m);
        let b = [Binding { set: 1, binding: 1, table: 7, linear: false, border: (false, false) }];
        assert_eq!(rewrite(&mut m, &Config { bindings: &b, cell: (8, 8) }).unwrap().samples, 0);
        assert_eq!(assemble(&m), before);
    }

    #[test]
    fn reads_the_rewrite_cannot_follow_are_refused() {
        let passed = r#"#version 450
layout(set = 0, binding = 1) uniform sampler2D scene;
layout(location = 0) out vec4 colour;
vec4 f(sampler2D s) { return texture(s, vec2(0.5)); }
void main() { colour = f(scene); }
"#;
        let fetched = r#"#version 450
layout(set = 0, binding = 1) uniform sampler2D scene;
layout(location = 0) out vec4 colour;
void main() { colour = texelFetch(scene, ivec2(1), 0); }
"#;
        let offset = r#"#version 450
layout(set = 0, binding = 1) uniform sampler2D scene;
layout(location = 0) out vec4 colour;
void main() { colour = textureOffset(scene, vec2(0.5), ivec2(1)); }
"#;
        let b = config(false, (false, false));
        for (src, what) in [(passed, "function"), (fetched, "Fetch"), (offset, "offset")] {
            let mut m = parse(&glsl(src, "frag").unwrap()).unwrap();
            let e = rewrite(&mut m, &Config { bindings: &b, cell: (8, 8) }).unwrap_err();
            assert!(format!("{e}{e:?}").contains(what), "{e}");
        }
    }

    #[test]
    fn the_scan_finds_combined_image_samplers() {
        assert!(declares_sampled_images(&glsl(POST, "frag").unwrap()));
        let plain = "#version 450\nlayout(location = 0) out vec4 c;\nvoid main() { c = vec4(1.0); }\n";
        assert!(!declares_sampled_images(&glsl(plain, "frag").unwrap()));
    }
}
