//! A small SPIR-V interpreter for differential tests of the varying linker
//! (issue 35): [`render`] runs a vertex shader on the three vertices of a
//! triangle, interpolates its location outputs at one point (flat ones from
//! the first vertex) and runs the fragment shader, so that a pair can be
//! evaluated before and after a link and compared ([`same`]). It covers the
//! subset the linker moves and translators emit around it: memory, access
//! chains, control flow, calls, 32-bit arithmetic and composites; anything
//! else is an error (the pair is then not evaluated). Uniform buffers and
//! push constants read fixed values, the same for a block and its copy.
//!
//! Not a stable API: the crate's tests and the fuzzer (`src/bin/fuzz.rs`)
//! use it.

use crate::ir::{decorations_of, def};
use rspirv::dr::{Function, Instruction, Module, Operand};
use rspirv::spirv::{BuiltIn, Decoration, Op, StorageClass, Word};
use std::collections::HashMap;
/// A value: scalars, composites, a pointer (allocation, path), undefined.
#[derive(Clone, Debug, PartialEq)]
pub enum V {
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

/// Most elements an array may have (a larger one is one undefined value:
/// what the interpreter does with it fails, and the pair is not evaluated).
const MAX_ELEMENTS: u32 = 1024;
/// Most nesting of composite types the interpreter follows.
const MAX_NESTING: usize = 16;
/// Most nested function calls.
const MAX_CALLS: usize = 16;

/// The value of every leaf of type `ty`: `leaf(scalar type, path)`.
fn shaped(m: &Module, ty: Word, leaf: &dyn Fn(&Instruction, &[u32]) -> V) -> V {
    fn walk(m: &Module, ty: Word, leaf: &dyn Fn(&Instruction, &[u32]) -> V, path: &mut Vec<u32>) -> V {
        let Some(t) = def(m, ty) else { return V::U };
        if path.len() > MAX_NESTING {
            return V::U;
        }
        let ops = &t.operands;
        let (element, n) = match t.class.opcode {
            Op::TypeVector | Op::TypeMatrix => (id(ops.first()).unwrap_or(0), literal(ops.get(1)).unwrap_or(0)),
            Op::TypeArray => (
                id(ops.first()).unwrap_or(0),
                id(ops.get(1)).and_then(|c| literal(def(m, c)?.operands.first())).unwrap_or(0),
            ),
            Op::TypeStruct => {
                let mut members = vec![];
                for (k, o) in ops.iter().enumerate() {
                    path.push(k as u32);
                    members.push(walk(m, id(Some(o)).unwrap_or(0), leaf, path));
                    path.pop();
                }
                return V::C(members);
            }
            _ => return leaf(t, path),
        };
        if n > MAX_ELEMENTS {
            return V::U;
        }
        V::C(
            (0..n)
                .map(|k| {
                    path.push(k);
                    let v = walk(m, element, leaf, path);
                    path.pop();
                    v
                })
                .collect(),
        )
    }
    walk(m, ty, leaf, &mut vec![])
}

fn undef_of(m: &Module, ty: Word) -> V {
    shaped(m, ty, &|_, _| V::U)
}

/// The fixed contents of a uniform buffer or push-constant block of type
/// `ty`, a function of `seed` (its set and binding) and each leaf's path,
/// so that a copy of the block's type in another module reads the same.
fn uniform_contents(m: &Module, ty: Word, seed: u32) -> V {
    shaped(m, ty, &|t, path| {
        let mut h = seed.wrapping_mul(0x9e37_79b1) ^ 0x5bd1_e995;
        for k in path {
            h = (h ^ k).wrapping_mul(0x85eb_ca77);
            h ^= h >> 13;
        }
        match t.class.opcode {
            Op::TypeFloat if literal(t.operands.first()) == Some(32) => V::F(0.25 + (h % 64) as f32 / 32.0),
            Op::TypeInt if literal(t.operands.first()) == Some(32) => V::I(1 + h % 16),
            Op::TypeBool => V::B(h & 1 == 1),
            _ => V::U,
        }
    })
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
        Op::ConstantNull => shaped(m, ty, &|t, _| match t.class.opcode {
            Op::TypeFloat => V::F(0.0),
            Op::TypeBool => V::B(false),
            _ => V::I(0),
        }),
        _ => undef_of(m, ty),
    }
}

/// Applies `f` to the leaves of `a` (and `b`), undefined where any is.
/// What [`map`] applies to each leaf (of one or two values).
type Leafwise<'a> = &'a dyn Fn(&V, Option<&V>) -> Result<V, String>;

fn map(a: &V, b: Option<&V>, f: Leafwise) -> Result<V, String> {
    match (a, b) {
        (V::U, _) | (_, Some(V::U)) => Ok(V::U),
        (V::C(xs), None) => Ok(V::C(xs.iter().map(|x| map(x, None, f)).collect::<Result<_, _>>()?)),
        (V::C(xs), Some(V::C(ys))) => {
            Ok(V::C(xs.iter().zip(ys).map(|(x, y)| map(x, Some(y), f)).collect::<Result<_, _>>()?))
        }
        _ => f(a, b),
    }
}

/// The GLSL.std.450 instructions the interpreter knows (operands of an
/// `OpExtInst`: the set, the instruction, its arguments from `arg(2)`).
fn glsl_std_450(m: &Module, ops: &[Operand], arg: &dyn Fn(usize) -> Result<V, String>) -> Result<V, String> {
    let set = id(ops.first()).and_then(|s| m.ext_inst_imports.iter().find(|i| i.result_id == Some(s)));
    let is_glsl =
        set.is_some_and(|s| matches!(s.operands.first(), Some(Operand::LiteralString(n)) if n == "GLSL.std.450"));
    let Some(Operand::LiteralExtInstInteger(k)) = ops.get(1).filter(|_| is_glsl) else {
        return Err("an extended instruction not of GLSL.std.450".into());
    };
    let f1 = |f: fn(f32) -> f32| {
        map(&arg(2)?, None, &|a, _| match a {
            V::F(x) => Ok(V::F(f(*x))),
            _ => Err(format!("GLSL.std.450 {k} of {a:?}")),
        })
    };
    let f2 = |f: fn(f32, f32) -> f32| {
        map(&arg(2)?, Some(&arg(3)?), &|a, b| match (a, b) {
            (V::F(x), Some(V::F(y))) => Ok(V::F(f(*x, *y))),
            _ => Err(format!("GLSL.std.450 {k} of {a:?}")),
        })
    };
    let f3 = |f: fn(f32, f32, f32) -> f32| {
        let (b, c) = (arg(3)?, arg(4)?);
        // (Three operands: `map` pairs two; the third is zipped by hand.)
        let bc = map(&b, Some(&c), &|x, y| Ok(V::C(vec![x.clone(), y.cloned().unwrap_or(V::U)])))?;
        map(&arg(2)?, Some(&bc), &|a, p| match (a, p) {
            (V::F(x), Some(V::C(yz))) => match yz.as_slice() {
                [V::F(y), V::F(z)] => Ok(V::F(f(*x, *y, *z))),
                _ => Ok(V::U),
            },
            _ => Err(format!("GLSL.std.450 {k} of {a:?}")),
        })
    };
    match k {
        4 => f1(f32::abs),
        8 => f1(f32::floor),
        9 => f1(f32::ceil),
        10 => f1(|x| x - x.floor()),
        13 => f1(f32::sin),
        14 => f1(f32::cos),
        26 => f2(f32::powf),
        27 => f1(f32::exp),
        28 => f1(f32::ln),
        29 => f1(f32::exp2),
        30 => f1(f32::log2),
        31 => f1(f32::sqrt),
        32 => f1(|x| 1.0 / x.sqrt()),
        48 => f2(|edge, x| if x < edge { 0.0 } else { 1.0 }),
        66 => match arg(2)? {
            V::F(x) => Ok(V::F(x.abs())),
            v => Ok(dot(&v, &v)).map(|d| if let V::F(d) = d { V::F(d.sqrt()) } else { V::U }),
        },
        69 => match arg(2)? {
            V::F(x) => Ok(V::F(x.signum())),
            v => {
                let len = match dot(&v, &v) {
                    V::F(d) => d.sqrt(),
                    _ => return Ok(V::U),
                };
                map(&v, None, &|a, _| match a {
                    V::F(x) => Ok(V::F(x / len)),
                    _ => Ok(V::U),
                })
            }
        },
        37 => f2(|x, y| if y < x { y } else { x }),
        40 => f2(|x, y| if x < y { y } else { x }),
        43 => f3(|x, lo, hi| x.max(lo).min(hi)),
        46 => f3(|x, y, a| x * (1.0 - a) + y * a),
        50 => f3(|a, b, c| a.mul_add(b, c)),
        _ => Err(format!("GLSL.std.450 {k} is not interpreted")),
    }
}

/// The dot product of two float vectors (undefined where a part is).
fn dot(a: &V, b: &V) -> V {
    let (V::C(a), V::C(b)) = (a, b) else { return V::U };
    let mut sum = 0.0f32;
    for (x, y) in a.iter().zip(b) {
        match (x, y) {
            (V::F(x), V::F(y)) => sum += x * y,
            _ => return V::U,
        }
    }
    V::F(sum)
}

/// A column-major float matrix times a vector: the sum of each column
/// times its component (undefined where a part is).
fn matrix_times_vector(m: &V, v: &V) -> V {
    let (V::C(cols), V::C(v)) = (m, v) else { return V::U };
    let mut out: Option<Vec<V>> = None;
    for (col, x) in cols.iter().zip(v) {
        let (V::C(col), V::F(x)) = (col, x) else { return V::U };
        let scaled: Vec<V> = col.iter().map(|c| if let V::F(c) = c { V::F(c * x) } else { V::U }).collect();
        out = Some(match out {
            None => scaled,
            Some(acc) => acc
                .iter()
                .zip(&scaled)
                .map(|(a, b)| match (a, b) {
                    (V::F(a), V::F(b)) => V::F(a + b),
                    _ => V::U,
                })
                .collect(),
        });
    }
    out.map_or(V::U, V::C)
}

/// The integer, comparison, matrix and conversion instructions the
/// interpreter knows beyond those of [`compute`] (operands from `arg`).
fn more(op: Op, arg: &dyn Fn(usize) -> Result<V, String>) -> Result<V, String> {
    let ibin = |f: fn(u32, u32) -> V| {
        map(&arg(0)?, Some(&arg(1)?), &|a, b| match (a, b) {
            (V::I(x), Some(V::I(y))) => Ok(f(*x, *y)),
            (V::B(x), Some(V::B(y))) => Ok(f(*x as u32, *y as u32)),
            _ => Err(format!("{op:?} of {a:?}")),
        })
    };
    let fcmp = |f: fn(f32, f32) -> bool| {
        map(&arg(0)?, Some(&arg(1)?), &|a, b| match (a, b) {
            (V::F(x), Some(V::F(y))) => Ok(V::B(f(*x, *y))),
            _ => Err(format!("{op:?} of {a:?}")),
        })
    };
    let unary = |f: &dyn Fn(&V) -> Option<V>| map(&arg(0)?, None, &|a, _| f(a).ok_or(format!("{op:?} of {a:?}")));
    Ok(match op {
        Op::SLessThanEqual => ibin(|a, b| V::B(a as i32 <= b as i32))?,
        Op::SGreaterThanEqual => ibin(|a, b| V::B(a as i32 >= b as i32))?,
        Op::ULessThan => ibin(|a, b| V::B(a < b))?,
        Op::UGreaterThan => ibin(|a, b| V::B(a > b))?,
        Op::ULessThanEqual => ibin(|a, b| V::B(a <= b))?,
        Op::UGreaterThanEqual => ibin(|a, b| V::B(a >= b))?,
        Op::LogicalEqual => ibin(|a, b| V::B(a == b))?,
        Op::LogicalNotEqual => ibin(|a, b| V::B(a != b))?,
        Op::BitwiseOr => ibin(|a, b| V::I(a | b))?,
        Op::BitwiseXor => ibin(|a, b| V::I(a ^ b))?,
        Op::ShiftLeftLogical => ibin(|a, b| if b < 32 { V::I(a << b) } else { V::U })?,
        Op::ShiftRightLogical => ibin(|a, b| if b < 32 { V::I(a >> b) } else { V::U })?,
        Op::ShiftRightArithmetic => ibin(|a, b| if b < 32 { V::I(((a as i32) >> b) as u32) } else { V::U })?,
        // Division by zero (and i32::MIN / -1) is undefined.
        Op::UDiv => ibin(|a, b| a.checked_div(b).map_or(V::U, V::I))?,
        Op::UMod => ibin(|a, b| a.checked_rem(b).map_or(V::U, V::I))?,
        Op::SDiv => ibin(|a, b| (a as i32).checked_div(b as i32).map_or(V::U, |x| V::I(x as u32)))?,
        Op::SRem => ibin(|a, b| (a as i32).checked_rem(b as i32).map_or(V::U, |x| V::I(x as u32)))?,
        Op::SMod => ibin(|a, b| {
            // The sign of the divisor.
            let (a, b) = (a as i32, b as i32);
            a.checked_rem(b).map_or(V::U, |r| V::I(if r != 0 && (r < 0) != (b < 0) { r + b } else { r } as u32))
        })?,
        Op::Not => unary(&|a| if let V::I(x) = a { Some(V::I(!x)) } else { None })?,
        Op::SNegate => unary(&|a| if let V::I(x) = a { Some(V::I(x.wrapping_neg())) } else { None })?,
        Op::LogicalNot => unary(&|a| if let V::B(x) = a { Some(V::B(!x)) } else { None })?,
        Op::FOrdEqual => fcmp(|a, b| a == b)?,
        Op::FOrdNotEqual => fcmp(|a, b| a != b && !a.is_nan() && !b.is_nan())?,
        Op::FUnordNotEqual => fcmp(|a, b| a != b)?,
        Op::FUnordLessThan => fcmp(|a, b| a.is_nan() || b.is_nan() || a < b)?,
        Op::FUnordGreaterThan => fcmp(|a, b| a.is_nan() || b.is_nan() || a > b)?,
        Op::ConvertFToU => unary(&|a| if let V::F(x) = a { Some(V::I(*x as u32)) } else { None })?,
        Op::Dot => dot(&arg(0)?, &arg(1)?),
        Op::MatrixTimesScalar => {
            let s = arg(1)?;
            map(&arg(0)?, None, &|a, _| match (a, &s) {
                (V::F(x), V::F(y)) => Ok(V::F(x * y)),
                _ => Ok(V::U),
            })?
        }
        Op::MatrixTimesVector => matrix_times_vector(&arg(0)?, &arg(1)?),
        _ => return Err(format!("{op:?} is not interpreted")),
    })
}

struct Machine<'a> {
    m: &'a Module,
    mem: Vec<V>,
    globals: HashMap<Word, usize>,
    steps: usize,
    /// Calls in progress (a bound: the interpreter recurses per call).
    depth: usize,
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
            let b = func.blocks.get(block).ok_or("a function without blocks")?;
            let here = b.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
            for i in &b.instructions {
                self.steps += 1;
                if self.steps > 100_000 {
                    return Err("too many steps".into());
                }
                match self.execute(func, &vals, i, prev)? {
                    Flow::Next(result) => {
                        if let (Some(v), Some(r)) = (result, i.result_id) {
                            vals.insert(r, v);
                        }
                    }
                    Flow::Branch(to) => {
                        (prev, block) = (here, *labels.get(&to).ok_or("no such block")?);
                        continue 'blocks;
                    }
                    Flow::Return(v) => return Ok(v),
                }
            }
            return Err("a block without a terminator".into());
        }
    }

    /// Executes instruction `i` of `func` (`vals`: the values of the call
    /// so far; `prev`: the label of the block it came from): memory, calls
    /// and control flow here, the rest in [`compute`].
    fn execute(
        &mut self,
        func: &Function,
        vals: &HashMap<Word, V>,
        i: &Instruction,
        prev: Word,
    ) -> Result<Flow, String> {
        let m = self.m;
        let ops = &i.operands;
        let arg = |k: usize| self.value(vals, id(ops.get(k)).ok_or(format!("{:?}: operand {k}", i.class.opcode))?);
        let ty = i.result_type.unwrap_or(0);
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
            Op::Phi => {
                let pair = ops.chunks(2).find(|p| id(p.get(1)) == Some(prev)).ok_or("phi")?;
                Some(self.value(vals, id(pair.first()).ok_or("phi")?)?)
            }
            Op::FunctionCall => {
                let args: Vec<V> = (1..ops.len()).map(arg).collect::<Result<_, _>>()?;
                if self.depth >= MAX_CALLS {
                    return Err("calls nested too deep".into());
                }
                self.depth += 1;
                let r = self.call(id(ops.first()).ok_or("call")?, args);
                self.depth -= 1;
                Some(r?)
            }
            Op::Branch => return Ok(Flow::Branch(id(ops.first()).ok_or("branch")?)),
            Op::BranchConditional => {
                let to = match arg(0)? {
                    V::B(true) => id(ops.get(1)),
                    V::B(false) => id(ops.get(2)),
                    other => return Err(format!("branch on {other:?}")),
                };
                return Ok(Flow::Branch(to.ok_or("branch")?));
            }
            Op::Return => return Ok(Flow::Return(V::U)),
            Op::ReturnValue => return Ok(Flow::Return(arg(0)?)),
            Op::Kill | Op::TerminateInvocation => return Err("discarded".into()),
            _ => Some(compute(m, func, i, &arg)?),
        };
        Ok(Flow::Next(result))
    }
}

/// What an instruction does to the walk of its function ([`Machine::execute`]).
enum Flow {
    /// On to the next instruction, with this result, if any.
    Next(Option<V>),
    /// On to the block of this label.
    Branch(Word),
    /// Out of the function, with this value.
    Return(V),
}

/// The value of instruction `i` of `func` that only computes (operands from
/// `arg`): copies, arithmetic, comparisons, conversions and composites,
/// then those of [`more`].
fn compute(
    m: &Module,
    func: &Function,
    i: &Instruction,
    arg: &dyn Fn(usize) -> Result<V, String>,
) -> Result<V, String> {
    let ops = &i.operands;
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
    let unary =
        |f: &dyn Fn(&V) -> Option<V>| map(&arg(0)?, None, &|a, _| f(a).ok_or(format!("{:?} of {a:?}", i.class.opcode)));
    Ok(match i.class.opcode {
        Op::CopyObject => arg(0)?,
        Op::Undef => undef_of(m, ty),
        Op::FAdd => fbin(|a, b| a + b)?,
        Op::FSub => fbin(|a, b| a - b)?,
        Op::FMul => fbin(|a, b| a * b)?,
        Op::FDiv => fbin(|a, b| a / b)?,
        Op::FNegate => unary(&|a| if let V::F(x) = a { Some(V::F(-x)) } else { None })?,
        Op::IAdd => ibin(|a, b| V::I(a.wrapping_add(b)))?,
        Op::ISub => ibin(|a, b| V::I(a.wrapping_sub(b)))?,
        Op::IMul => ibin(|a, b| V::I(a.wrapping_mul(b)))?,
        Op::BitwiseAnd => ibin(|a, b| V::I(a & b))?,
        Op::IEqual => ibin(|a, b| V::B(a == b))?,
        Op::INotEqual => ibin(|a, b| V::B(a != b))?,
        Op::SLessThan => ibin(|a, b| V::B((a as i32) < b as i32))?,
        Op::SGreaterThan => ibin(|a, b| V::B(a as i32 > b as i32))?,
        Op::ExtInst => glsl_std_450(m, ops, &|k| arg(k))?,
        Op::LogicalAnd => ibin(|a, b| V::B(a & b != 0))?,
        Op::LogicalOr => ibin(|a, b| V::B(a | b != 0))?,
        Op::FOrdGreaterThan => fcmp(|a, b| a > b)?,
        Op::FOrdLessThan => fcmp(|a, b| a < b)?,
        Op::FOrdGreaterThanEqual => fcmp(|a, b| a >= b)?,
        Op::FOrdLessThanEqual => fcmp(|a, b| a <= b)?,
        Op::ConvertSToF => unary(&|a| if let V::I(x) = a { Some(V::F(*x as i32 as f32)) } else { None })?,
        Op::ConvertUToF => unary(&|a| if let V::I(x) = a { Some(V::F(*x as f32)) } else { None })?,
        Op::ConvertFToS => unary(&|a| if let V::F(x) = a { Some(V::I(*x as i32 as u32)) } else { None })?,
        Op::Bitcast => unary(&|a| match a {
            V::F(x) if !float_result => Some(V::I(x.to_bits())),
            V::I(x) if float_result => Some(V::F(f32::from_bits(*x))),
            other => Some(other.clone()),
        })?,
        Op::VectorTimesScalar => {
            let s = arg(1)?;
            map(&arg(0)?, None, &|a, _| match (a, &s) {
                (_, V::U) => Ok(V::U),
                (V::F(x), V::F(y)) => Ok(V::F(x * y)),
                _ => Err("VectorTimesScalar".into()),
            })?
        }
        Op::Select => match arg(0)? {
            V::B(c) => {
                if c {
                    arg(1)?
                } else {
                    arg(2)?
                }
            }
            V::U => undef_of(m, ty),
            other => return Err(format!("select on {other:?}")),
        },
        Op::CompositeConstruct | Op::CompositeExtract | Op::CompositeInsert | Op::VectorShuffle => {
            composite(m, func, i, arg)?
        }
        op => more(op, arg)?,
    })
}

/// The value of composite instruction `i` of `func` (operands from `arg`):
/// construction, extraction, insertion and vector shuffles.
fn composite(
    m: &Module,
    func: &Function,
    i: &Instruction,
    arg: &dyn Fn(usize) -> Result<V, String>,
) -> Result<V, String> {
    let ops = &i.operands;
    let ty = i.result_type.unwrap_or(0);
    Ok(match i.class.opcode {
        Op::CompositeConstruct => {
            let parts: Vec<V> = (0..ops.len()).map(arg).collect::<Result<_, _>>()?;
            let vector = def(m, ty).is_some_and(|t| t.class.opcode == Op::TypeVector);
            V::C(if vector {
                parts.into_iter().flat_map(|p| if let V::C(xs) = p { xs } else { vec![p] }).collect()
            } else {
                parts
            })
        }
        Op::CompositeExtract => {
            let mut v = arg(0)?;
            for o in &ops[1..] {
                v = match (v, literal(Some(o))) {
                    (V::C(xs), Some(k)) => xs.get(k as usize).cloned().ok_or("extract out of range")?,
                    _ => V::U,
                };
            }
            v
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
            whole
        }
        Op::VectorShuffle => {
            // An undefined operand is a vector of undefined components.
            let parts = |k: usize| -> Result<Vec<V>, String> {
                Ok(match arg(k)? {
                    V::C(xs) => xs,
                    _ => {
                        let x = id(ops.get(k)).unwrap_or(0);
                        let ty = def(m, x).and_then(|d| d.result_type).or_else(|| {
                            func.blocks
                                .iter()
                                .flat_map(|b| &b.instructions)
                                .chain(&func.parameters)
                                .find(|i| i.result_id == Some(x))
                                .and_then(|i| i.result_type)
                        });
                        let n = ty.and_then(|t| literal(def(m, t)?.operands.get(1))).unwrap_or(0);
                        vec![V::U; n.min(MAX_ELEMENTS) as usize]
                    }
                })
            };
            let mut a = parts(0)?;
            a.extend(parts(1)?);
            V::C(
                ops[2..]
                    .iter()
                    .map(|o| literal(Some(o)).and_then(|k| a.get(k as usize).cloned()).unwrap_or(V::U))
                    .collect(),
            )
        }
        op => return Err(format!("{op:?} is not a composite instruction")),
    })
}

/// One interface slot: (location, component).
pub type Slot = (u32, u32);

/// The scalars of `v` (of type `ty`) by slot, from (`location`, `component`):
/// vectors over components, arrays and matrices over locations.
fn to_slots(m: &Module, ty: Word, v: &V, at: Slot, out: &mut HashMap<Slot, V>) {
    let Some(t) = def(m, ty) else { return };
    match (t.class.opcode, v) {
        (Op::TypeVector, V::C(xs)) => {
            for (k, x) in xs.iter().enumerate() {
                out.insert((at.0, at.1.saturating_add(k as u32)), x.clone());
            }
        }
        (Op::TypeVector, _) => {
            for k in 0..literal(t.operands.get(1)).unwrap_or(0).min(MAX_ELEMENTS) {
                out.insert((at.0, at.1.saturating_add(k)), V::U);
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
            for k in 0..n.min(MAX_ELEMENTS) {
                to_slots(m, e, xs.get(k as usize).unwrap_or(&V::U), (at.0.saturating_add(k), at.1), out);
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
        Op::TypeVector => V::C(
            (0..literal(t.operands.get(1)).unwrap_or(0).min(MAX_ELEMENTS))
                .map(|k| get((at.0, at.1.saturating_add(k))))
                .collect(),
        ),
        Op::TypeArray | Op::TypeMatrix => {
            let e = id(t.operands.first()).unwrap_or(0);
            let n = match t.class.opcode {
                Op::TypeMatrix => literal(t.operands.get(1)).unwrap_or(0),
                _ => id(t.operands.get(1)).and_then(|c| literal(def(m, c)?.operands.first())).unwrap_or(0),
            };
            V::C((0..n.min(MAX_ELEMENTS)).map(|k| from_slots(m, e, (at.0.saturating_add(k), at.1), get)).collect())
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
pub fn run(
    m: &Module,
    input: &dyn Fn(Slot, bool) -> V,
    builtins: &dyn Fn(BuiltIn) -> V,
) -> Result<HashMap<Slot, V>, String> {
    let mut machine = Machine { m, mem: vec![], globals: HashMap::new(), steps: 0, depth: 0 };
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
            (Some(Operand::StorageClass(StorageClass::Uniform | StorageClass::PushConstant)), _) => {
                let set = decoration(m, var, Decoration::DescriptorSet).flatten().unwrap_or(0);
                let binding = decoration(m, var, Decoration::Binding).flatten().unwrap_or(0);
                uniform_contents(m, ty, 1 + set * 64 + binding)
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
pub fn render(vs: &Module, fs: &Module, first: u32) -> Result<HashMap<Slot, V>, String> {
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

/// Whether two values are the same up to interpolation rounding (NaN is
/// the same as NaN; undefined is the same as nothing).
pub fn close(a: &V, b: &V) -> bool {
    match (a, b) {
        (V::F(x), V::F(y)) if x.is_nan() || y.is_nan() => x.is_nan() && y.is_nan(),
        (V::F(x), V::F(y)) => x == y || (x - y).abs() <= 1e-4 * x.abs().max(1.0),
        (V::C(xs), V::C(ys)) => xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| close(x, y)),
        (V::U, _) | (_, V::U) => false,
        _ => a == b,
    }
}

/// Whether `v` is defined in every part.
pub fn defined(v: &V) -> bool {
    match v {
        V::U | V::P(..) => false,
        V::C(xs) => xs.iter().all(defined),
        _ => true,
    }
}

/// The triangles [`same`] renders (their first vertex index).
pub const TRIANGLES: [u32; 3] = [0, 3, 7];

/// What [`same`] found.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Both render the same fragment outputs, defined, for every triangle.
    Same,
    /// The original pair cannot be evaluated (an instruction outside the
    /// subset, a discard, an undefined or empty result): not compared.
    NotEvaluated(String),
    /// The linked pair renders something else, or cannot be evaluated
    /// where the original could.
    Differs(String),
}

/// Renders the pair (`vs0`, `fs0`) and the linked pair (`vs`, `fs`) for
/// [`TRIANGLES`] and compares their fragment outputs.
pub fn same(vs0: &Module, fs0: &Module, vs: &Module, fs: &Module) -> Verdict {
    for first in TRIANGLES {
        let before = match render(vs0, fs0, first) {
            Ok(b) if !b.is_empty() && b.values().all(defined) => b,
            Ok(b) => return Verdict::NotEvaluated(format!("undefined: {b:?}")),
            Err(e) => return Verdict::NotEvaluated(e),
        };
        let after = match render(vs, fs, first) {
            Ok(a) => a,
            Err(e) => return Verdict::Differs(format!("triangle {first}: the linked pair: {e}")),
        };
        let same = before.len() == after.len() && before.iter().all(|(s, v)| after.get(s).is_some_and(|w| close(v, w)));
        if !same {
            let mut slots: Vec<&Slot> = before.keys().chain(after.keys()).collect();
            slots.sort();
            slots.dedup();
            let diff: Vec<String> = slots
                .into_iter()
                .filter(|s| !matches!((before.get(s), after.get(s)), (Some(v), Some(w)) if close(v, w)))
                .map(|s| format!("{s:?}: {:?} -> {:?}", before.get(s), after.get(s)))
                .collect();
            return Verdict::Differs(format!("triangle {first}: {}", diff.join(", ")));
        }
    }
    Verdict::Same
}
