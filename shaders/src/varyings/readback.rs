//! Tests (issue 35): the pair linker against producers that read back their
//! own outputs, write them in parts, under conditions, repeatedly, in called
//! functions or through pointers passed on. Each pair is linked at `safe`
//! and `full` and *evaluated*: [`Machine`], a small SPIR-V interpreter for
//! the subset these shaders use (memory, access chains, control flow,
//! calls, 32-bit arithmetic and composites), runs the vertex shader on the
//! three vertices of a triangle, interpolates its location outputs at one
//! point (flat ones from the first vertex) and runs the fragment shader;
//! the linked pair must write the same fragment outputs as the original
//! (up to interpolation rounding), so a valid but wrong module fails.

use super::{link, Level, Report};
use crate::ir::{decorations_of, def};
use crate::testing::{assemble_text, disassemble, glsl};
use crate::{assemble, parse, validate, TargetEnv};
use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Decoration, Op, StorageClass, Word};
use std::collections::HashMap;

/// A value: scalars, composites, a pointer (allocation, path), undefined.
#[derive(Clone, Debug, PartialEq)]
enum V {
    F(f32),
    I(u32),
    B(bool),
    C(Vec<V>),
    P(usize, Vec<usize>),
    U,
}

fn literal(o: Option<&Operand>) -> Option<u32> {
    match o {
        Some(Operand::LiteralBit32(v)) => Some(*v),
        _ => None,
    }
}

fn id(o: Option<&Operand>) -> Option<Word> {
    match o {
        Some(Operand::IdRef(v)) => Some(*v),
        _ => None,
    }
}

/// The value of every leaf of type `ty`: `leaf(scalar type)`.
fn shaped(m: &Module, ty: Word, leaf: &dyn Fn(&Instruction) -> V) -> V {
    let Some(t) = def(m, ty) else { return V::U };
    let ops = &t.operands;
    match t.class.opcode {
        Op::TypeVector | Op::TypeMatrix => {
            let e = shaped(m, id(ops.first()).unwrap_or(0), leaf);
            V::C(vec![e; literal(ops.get(1)).unwrap_or(0) as usize])
        }
        Op::TypeArray => {
            let n = id(ops.get(1)).and_then(|c| literal(def(m, c)?.operands.first())).unwrap_or(0);
            V::C(vec![shaped(m, id(ops.first()).unwrap_or(0), leaf); n as usize])
        }
        Op::TypeStruct => V::C(ops.iter().map(|o| shaped(m, id(Some(o)).unwrap_or(0), leaf)).collect()),
        _ => leaf(t),
    }
}

fn undef_of(m: &Module, ty: Word) -> V {
    shaped(m, ty, &|_| V::U)
}

fn constant_value(m: &Module, c: &Instruction) -> V {
    let ty = c.result_type.unwrap_or(0);
    match c.class.opcode {
        Op::Constant | Op::SpecConstant => {
            let bits = literal(c.operands.first()).unwrap_or(0);
            match def(m, ty).map(|t| t.class.opcode) {
                Some(Op::TypeFloat) => V::F(f32::from_bits(bits)),
                _ => V::I(bits),
            }
        }
        Op::ConstantTrue | Op::SpecConstantTrue => V::B(true),
        Op::ConstantFalse | Op::SpecConstantFalse => V::B(false),
        Op::ConstantComposite | Op::SpecConstantComposite => V::C(
            c.operands
                .iter()
                .map(|o| id(Some(o)).and_then(|x| def(m, x)).map_or(V::U, |x| constant_value(m, x)))
                .collect(),
        ),
        Op::ConstantNull => shaped(m, ty, &|t| match t.class.opcode {
            Op::TypeFloat => V::F(0.0),
            Op::TypeBool => V::B(false),
            _ => V::I(0),
        }),
        _ => undef_of(m, ty),
    }
}

/// Applies `f` to the leaves of `a` (and `b`), undefined where any is.
fn map(a: &V, b: Option<&V>, f: &dyn Fn(&V, Option<&V>) -> Result<V, String>) -> Result<V, String> {
    match (a, b) {
        (V::U, _) | (_, Some(V::U)) => Ok(V::U),
        (V::C(xs), None) => Ok(V::C(xs.iter().map(|x| map(x, None, f)).collect::<Result<_, _>>()?)),
        (V::C(xs), Some(V::C(ys))) => {
            Ok(V::C(xs.iter().zip(ys).map(|(x, y)| map(x, Some(y), f)).collect::<Result<_, _>>()?))
        }
        _ => f(a, b),
    }
}

struct Machine<'a> {
    m: &'a Module,
    mem: Vec<V>,
    globals: HashMap<Word, usize>,
    steps: usize,
}

impl<'a> Machine<'a> {
    fn read(&self, p: &V) -> Result<V, String> {
        let V::P(a, path) = p else { return Err(format!("load through {p:?}")) };
        let mut v = &self.mem[*a];
        for k in path {
            match v {
                V::C(xs) => v = xs.get(*k).ok_or("index out of range")?,
                _ => return Ok(V::U),
            }
        }
        Ok(v.clone())
    }

    fn write(&mut self, p: &V, value: V) -> Result<(), String> {
        let V::P(a, path) = p else { return Err(format!("store through {p:?}")) };
        let mut v = &mut self.mem[*a];
        for k in path {
            match v {
                V::C(xs) => v = xs.get_mut(*k).ok_or("index out of range")?,
                _ => return Err("store into a scalar".into()),
            }
        }
        *v = value;
        Ok(())
    }

    fn value(&self, vals: &HashMap<Word, V>, x: Word) -> Result<V, String> {
        if let Some(v) = vals.get(&x) {
            return Ok(v.clone());
        }
        if let Some(a) = self.globals.get(&x) {
            return Ok(V::P(*a, vec![]));
        }
        def(self.m, x).map(|c| constant_value(self.m, c)).ok_or(format!("%{x} has no value"))
    }

    /// Runs function `f` with `args`; its return value.
    fn call(&mut self, f: Word, args: Vec<V>) -> Result<V, String> {
        let m = self.m;
        let func = m
            .functions
            .iter()
            .find(|g| g.def.as_ref().and_then(|d| d.result_id) == Some(f))
            .ok_or(format!("no function %{f}"))?;
        let mut vals: HashMap<Word, V> = HashMap::new();
        for (p, a) in func.parameters.iter().zip(args) {
            vals.insert(p.result_id.unwrap_or(0), a);
        }
        let labels: HashMap<Word, usize> =
            func.blocks.iter().enumerate().filter_map(|(k, b)| Some((b.label.as_ref()?.result_id?, k))).collect();
        let (mut block, mut prev) = (0usize, 0 as Word);
        'blocks: loop {
            let b = &func.blocks[block];
            let here = b.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
            for i in &b.instructions {
                self.steps += 1;
                if self.steps > 100_000 {
                    return Err("too many steps".into());
                }
                let ops = &i.operands;
                let arg =
                    |k: usize| self.value(&vals, id(ops.get(k)).ok_or(format!("{:?}: operand {k}", i.class.opcode))?);
                let ty = i.result_type.unwrap_or(0);
                let scalar_ty = match def(m, ty) {
                    Some(t) if t.class.opcode == Op::TypeVector => id(t.operands.first()).unwrap_or(0),
                    _ => ty,
                };
                let float_result = def(m, scalar_ty).is_some_and(|t| t.class.opcode == Op::TypeFloat);
                let fbin = |f: fn(f32, f32) -> f32| {
                    map(&arg(0)?, Some(&arg(1)?), &|a, b| match (a, b) {
                        (V::F(x), Some(V::F(y))) => Ok(V::F(f(*x, *y))),
                        _ => Err(format!("{:?} of {a:?}", i.class.opcode)),
                    })
                };
                let ibin = |f: fn(u32, u32) -> V| {
                    map(&arg(0)?, Some(&arg(1)?), &|a, b| match (a, b) {
                        (V::I(x), Some(V::I(y))) => Ok(f(*x, *y)),
                        (V::B(x), Some(V::B(y))) => Ok(f(*x as u32, *y as u32)),
                        _ => Err(format!("{:?} of {a:?}", i.class.opcode)),
                    })
                };
                let fcmp = |f: fn(f32, f32) -> bool| {
                    map(&arg(0)?, Some(&arg(1)?), &|a, b| match (a, b) {
                        (V::F(x), Some(V::F(y))) => Ok(V::B(f(*x, *y))),
                        _ => Err(format!("{:?} of {a:?}", i.class.opcode)),
                    })
                };
                let unary = |f: &dyn Fn(&V) -> Option<V>| {
                    map(&arg(0)?, None, &|a, _| f(a).ok_or(format!("{:?} of {a:?}", i.class.opcode)))
                };
                let result: Option<V> = match i.class.opcode {
                    Op::SelectionMerge | Op::LoopMerge | Op::Nop | Op::Line | Op::NoLine => None,
                    Op::Variable => {
                        let pointee = def(m, ty).and_then(|p| id(p.operands.get(1))).unwrap_or(0);
                        let init = match ops.get(1) {
                            Some(_) => arg(1)?,
                            None => undef_of(m, pointee),
                        };
                        self.mem.push(init);
                        Some(V::P(self.mem.len() - 1, vec![]))
                    }
                    Op::Load => Some(self.read(&arg(0)?)?),
                    Op::Store => {
                        let (p, v) = (arg(0)?, arg(1)?);
                        self.write(&p, v)?;
                        None
                    }
                    Op::CopyMemory => {
                        let v = self.read(&arg(1)?)?;
                        self.write(&arg(0)?, v)?;
                        None
                    }
                    Op::AccessChain | Op::InBoundsAccessChain => {
                        let V::P(a, mut path) = arg(0)? else { return Err("access chain of a value".into()) };
                        for k in 1..ops.len() {
                            match arg(k)? {
                                V::I(x) => path.push(x as usize),
                                other => return Err(format!("index {other:?}")),
                            }
                        }
                        Some(V::P(a, path))
                    }
                    Op::CopyObject => Some(arg(0)?),
                    Op::Undef => Some(undef_of(m, ty)),
                    Op::FAdd => Some(fbin(|a, b| a + b)?),
                    Op::FSub => Some(fbin(|a, b| a - b)?),
                    Op::FMul => Some(fbin(|a, b| a * b)?),
                    Op::FDiv => Some(fbin(|a, b| a / b)?),
                    Op::FNegate => Some(unary(&|a| if let V::F(x) = a { Some(V::F(-x)) } else { None })?),
                    Op::IAdd => Some(ibin(|a, b| V::I(a.wrapping_add(b)))?),
                    Op::ISub => Some(ibin(|a, b| V::I(a.wrapping_sub(b)))?),
                    Op::IMul => Some(ibin(|a, b| V::I(a.wrapping_mul(b)))?),
                    Op::BitwiseAnd => Some(ibin(|a, b| V::I(a & b))?),
                    Op::IEqual => Some(ibin(|a, b| V::B(a == b))?),
                    Op::INotEqual => Some(ibin(|a, b| V::B(a != b))?),
                    Op::SLessThan => Some(ibin(|a, b| V::B((a as i32) < b as i32))?),
                    Op::SGreaterThan => Some(ibin(|a, b| V::B(a as i32 > b as i32))?),
                    Op::LogicalAnd => Some(ibin(|a, b| V::B(a & b != 0))?),
                    Op::LogicalOr => Some(ibin(|a, b| V::B(a | b != 0))?),
                    Op::FOrdGreaterThan => Some(fcmp(|a, b| a > b)?),
                    Op::FOrdLessThan => Some(fcmp(|a, b| a < b)?),
                    Op::FOrdGreaterThanEqual => Some(fcmp(|a, b| a >= b)?),
                    Op::FOrdLessThanEqual => Some(fcmp(|a, b| a <= b)?),
                    Op::ConvertSToF => {
                        Some(unary(&|a| if let V::I(x) = a { Some(V::F(*x as i32 as f32)) } else { None })?)
                    }
                    Op::ConvertUToF => Some(unary(&|a| if let V::I(x) = a { Some(V::F(*x as f32)) } else { None })?),
                    Op::ConvertFToS => {
                        Some(unary(&|a| if let V::F(x) = a { Some(V::I(*x as i32 as u32)) } else { None })?)
                    }
                    Op::Bitcast => Some(unary(&|a| match a {
                        V::F(x) if !float_result => Some(V::I(x.to_bits())),
                        V::I(x) if float_result => Some(V::F(f32::from_bits(*x))),
                        other => Some(other.clone()),
                    })?),
                    Op::VectorTimesScalar => {
                        let s = arg(1)?;
                        Some(map(&arg(0)?, None, &|a, _| match (a, &s) {
                            (_, V::U) => Ok(V::U),
                            (V::F(x), V::F(y)) => Ok(V::F(x * y)),
                            _ => Err("VectorTimesScalar".into()),
                        })?)
                    }
                    Op::Select => match arg(0)? {
                        V::B(c) => Some(if c { arg(1)? } else { arg(2)? }),
                        V::U => Some(undef_of(m, ty)),
                        other => return Err(format!("select on {other:?}")),
                    },
                    Op::CompositeConstruct => {
                        let parts: Vec<V> = (0..ops.len()).map(arg).collect::<Result<_, _>>()?;
                        let vector = def(m, ty).is_some_and(|t| t.class.opcode == Op::TypeVector);
                        Some(V::C(if vector {
                            parts.into_iter().flat_map(|p| if let V::C(xs) = p { xs } else { vec![p] }).collect()
                        } else {
                            parts
                        }))
                    }
                    Op::CompositeExtract => {
                        let mut v = arg(0)?;
                        for o in &ops[1..] {
                            v = match (v, literal(Some(o))) {
                                (V::C(xs), Some(k)) => xs.get(k as usize).cloned().ok_or("extract out of range")?,
                                _ => V::U,
                            };
                        }
                        Some(v)
                    }
                    Op::CompositeInsert => {
                        let (part, mut whole) = (arg(0)?, arg(1)?);
                        let mut at = &mut whole;
                        for o in &ops[2..] {
                            match (at, literal(Some(o))) {
                                (V::C(xs), Some(k)) => at = xs.get_mut(k as usize).ok_or("insert out of range")?,
                                _ => return Err("insert into a scalar".into()),
                            }
                        }
                        *at = part;
                        Some(whole)
                    }
                    Op::VectorShuffle => {
                        let (V::C(mut a), V::C(b)) = (arg(0)?, arg(1)?) else { return Err("shuffle".into()) };
                        a.extend(b);
                        Some(V::C(
                            ops[2..]
                                .iter()
                                .map(|o| literal(Some(o)).and_then(|k| a.get(k as usize).cloned()).unwrap_or(V::U))
                                .collect(),
                        ))
                    }
                    Op::Phi => {
                        let pair = ops.chunks(2).find(|p| id(p.get(1)) == Some(prev)).ok_or("phi")?;
                        Some(self.value(&vals, id(pair.first()).ok_or("phi")?)?)
                    }
                    Op::FunctionCall => {
                        let args: Vec<V> = (1..ops.len()).map(arg).collect::<Result<_, _>>()?;
                        Some(self.call(id(ops.first()).ok_or("call")?, args)?)
                    }
                    Op::Branch => {
                        (prev, block) = (here, labels[&id(ops.first()).ok_or("branch")?]);
                        continue 'blocks;
                    }
                    Op::BranchConditional => {
                        let to = match arg(0)? {
                            V::B(true) => id(ops.get(1)),
                            V::B(false) => id(ops.get(2)),
                            other => return Err(format!("branch on {other:?}")),
                        };
                        (prev, block) = (here, labels[&to.ok_or("branch")?]);
                        continue 'blocks;
                    }
                    Op::Return => return Ok(V::U),
                    Op::ReturnValue => return arg(0),
                    Op::Kill | Op::TerminateInvocation => return Err("discarded".into()),
                    op => return Err(format!("{op:?} is not interpreted")),
                };
                if let (Some(v), Some(r)) = (result, i.result_id) {
                    vals.insert(r, v);
                }
            }
            return Err("a block without a terminator".into());
        }
    }
}

/// One interface slot: (location, component).
type Slot = (u32, u32);

/// The scalars of `v` (of type `ty`) by slot, from (`location`, `component`):
/// vectors over components, arrays and matrices over locations.
fn to_slots(m: &Module, ty: Word, v: &V, at: Slot, out: &mut HashMap<Slot, V>) {
    let Some(t) = def(m, ty) else { return };
    match (t.class.opcode, v) {
        (Op::TypeVector, V::C(xs)) => {
            for (k, x) in xs.iter().enumerate() {
                out.insert((at.0, at.1 + k as u32), x.clone());
            }
        }
        (Op::TypeVector, _) => {
            for k in 0..literal(t.operands.get(1)).unwrap_or(0) {
                out.insert((at.0, at.1 + k), V::U);
            }
        }
        (Op::TypeArray | Op::TypeMatrix, _) => {
            let e = id(t.operands.first()).unwrap_or(0);
            let xs = match v {
                V::C(xs) => xs.clone(),
                _ => vec![],
            };
            let n = match t.class.opcode {
                Op::TypeMatrix => literal(t.operands.get(1)).unwrap_or(0),
                _ => id(t.operands.get(1)).and_then(|c| literal(def(m, c)?.operands.first())).unwrap_or(0),
            };
            for k in 0..n {
                to_slots(m, e, xs.get(k as usize).unwrap_or(&V::U), (at.0 + k, at.1), out);
            }
        }
        _ => {
            out.insert(at, v.clone());
        }
    }
}

/// A value of type `ty` read from slots (the inverse of [`to_slots`]).
fn from_slots(m: &Module, ty: Word, at: Slot, get: &dyn Fn(Slot) -> V) -> V {
    let Some(t) = def(m, ty) else { return V::U };
    match t.class.opcode {
        Op::TypeVector => V::C((0..literal(t.operands.get(1)).unwrap_or(0)).map(|k| get((at.0, at.1 + k))).collect()),
        Op::TypeArray | Op::TypeMatrix => {
            let e = id(t.operands.first()).unwrap_or(0);
            let n = match t.class.opcode {
                Op::TypeMatrix => literal(t.operands.get(1)).unwrap_or(0),
                _ => id(t.operands.get(1)).and_then(|c| literal(def(m, c)?.operands.first())).unwrap_or(0),
            };
            V::C((0..n).map(|k| from_slots(m, e, (at.0 + k, at.1), get)).collect())
        }
        _ => get(at),
    }
}

fn decoration(m: &Module, var: Word, d: Decoration) -> Option<Option<u32>> {
    decorations_of(m, var)
        .iter()
        .find(|a| a.operands.get(1) == Some(&Operand::Decoration(d)))
        .map(|a| literal(a.operands.get(2)))
}

fn builtin(m: &Module, var: Word) -> Option<BuiltIn> {
    decorations_of(m, var).iter().find_map(|a| match (a.operands.get(1), a.operands.get(2)) {
        (Some(Operand::Decoration(Decoration::BuiltIn)), Some(Operand::BuiltIn(b))) => Some(*b),
        _ => None,
    })
}

/// Runs the entry point of `m` with its location inputs from `input`
/// (slot → scalar) and built-ins from `builtins`; its location outputs by slot.
fn run(
    m: &Module,
    input: &dyn Fn(Slot, bool) -> V,
    builtins: &dyn Fn(BuiltIn) -> V,
) -> Result<HashMap<Slot, V>, String> {
    let mut machine = Machine { m, mem: vec![], globals: HashMap::new(), steps: 0 };
    let mut outputs: Vec<(Word, Word, Slot)> = vec![];
    for g in m.types_global_values.iter().filter(|g| g.class.opcode == Op::Variable) {
        let (Some(var), Some(ptr)) = (g.result_id, g.result_type) else { continue };
        let ty = def(m, ptr).and_then(|p| id(p.operands.get(1))).unwrap_or(0);
        let location = decoration(m, var, Decoration::Location).flatten();
        let slot = location.map(|l| (l, decoration(m, var, Decoration::Component).flatten().unwrap_or(0)));
        let flat = decoration(m, var, Decoration::Flat).is_some();
        let value = match (g.operands.first(), slot) {
            (Some(Operand::StorageClass(StorageClass::Input)), Some(at)) => from_slots(m, ty, at, &|s| input(s, flat)),
            (Some(Operand::StorageClass(StorageClass::Input)), None) => {
                builtin(m, var).map_or_else(|| undef_of(m, ty), builtins)
            }
            (_, _) => match g.operands.get(1) {
                Some(Operand::IdRef(init)) => def(m, *init).map_or(V::U, |c| constant_value(m, c)),
                _ => undef_of(m, ty),
            },
        };
        if let (Some(Operand::StorageClass(StorageClass::Output)), Some(at)) = (g.operands.first(), slot) {
            outputs.push((var, ty, at));
        }
        machine.mem.push(value);
        machine.globals.insert(var, machine.mem.len() - 1);
    }
    let entry = id(m.entry_points.first().and_then(|e| e.operands.get(1))).ok_or("no entry point")?;
    machine.call(entry, vec![])?;
    let mut slots = HashMap::new();
    for (var, ty, at) in outputs {
        to_slots(m, ty, &machine.mem[machine.globals[&var]], at, &mut slots);
    }
    Ok(slots)
}

/// The fragment outputs of the pair for the triangle of vertices
/// `first..first + 3`, at one point inside it.
fn render(vs: &Module, fs: &Module, first: u32) -> Result<HashMap<Slot, V>, String> {
    const WEIGHTS: [f32; 3] = [0.25, 0.35, 0.4];
    let mut vertices = vec![];
    for k in 0..3 {
        let index = first + k;
        let attribute = move |(l, c): Slot, _| V::F(0.75 + 1.25 * index as f32 + 0.5 * l as f32 + 0.125 * c as f32);
        let builtins = move |b| match b {
            BuiltIn::VertexIndex => V::I(index),
            BuiltIn::InstanceIndex => V::I(0),
            _ => V::U,
        };
        vertices.push(run(vs, &attribute, &builtins)?);
    }
    let varying = |s: Slot, flat: bool| {
        let at: Vec<&V> = vertices.iter().map(|v| v.get(&s).unwrap_or(&V::U)).collect();
        match (flat, at.as_slice()) {
            (true, [first, ..]) => (*first).clone(),
            (false, [V::F(a), V::F(b), V::F(c)]) => V::F(WEIGHTS[0] * a + WEIGHTS[1] * b + WEIGHTS[2] * c),
            _ => V::U,
        }
    };
    let builtins = |b| match b {
        BuiltIn::FragCoord => V::C(vec![V::F(1.5), V::F(2.5), V::F(0.5), V::F(1.0)]),
        BuiltIn::FrontFacing => V::B(true),
        _ => V::U,
    };
    run(fs, &varying, &builtins)
}

/// Whether two values are the same up to interpolation rounding.
fn close(a: &V, b: &V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) => (x - y).abs() <= 1e-4 * x.abs().max(1.0),
        (V::C(xs), V::C(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| close(x, y)),
        (V::U, _) | (_, V::U) => false,
        _ => a == b,
    }
}

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
