//! Removing capabilities without losing the ones they implied.
//!
//! Declaring a capability implicitly declares those it depends on (the
//! `capabilities` of its enumerant in the SPIR-V grammar): a fragment shader
//! whose only capability is `FragmentDensityEXT` is a `Shader` module. A pass
//! that removes such a capability must declare what it implied, or the output
//! stops validating. Neither rspirv nor the `spirv` crate carries the
//! implication table, so [`implied_by`] lists it for the capabilities this
//! crate removes.

use rspirv::dr::{Instruction, Module, Operand};
use rspirv::spirv::Capability;

/// What declaring `c` implicitly declares (from the SPIR-V grammar), for the
/// capabilities the passes of this crate remove; empty for the others.
pub fn implied_by(c: Capability) -> &'static [Capability] {
    match c {
        Capability::FragmentDensityEXT
        | Capability::FragmentShaderSampleInterlockEXT
        | Capability::FragmentShaderPixelInterlockEXT
        | Capability::FragmentShaderShadingRateInterlockEXT => &[Capability::Shader],
        _ => &[],
    }
}

fn capability_of(i: &Instruction) -> Option<Capability> {
    match i.operands.first() {
        Some(Operand::Capability(c)) => Some(*c),
        _ => None,
    }
}

/// Removes every `OpCapability` of `removed` from `module` and declares, in
/// place of the first one removed, each capability they implied that the
/// module does not already declare. Returns whether anything was removed.
pub fn remove(module: &mut Module, removed: &[Capability]) -> bool {
    let mut kept = Vec::with_capacity(module.capabilities.len());
    let mut implied: Vec<Capability> = Vec::new();
    let mut at = None;
    for i in std::mem::take(&mut module.capabilities) {
        match capability_of(&i) {
            Some(c) if removed.contains(&c) => {
                at.get_or_insert(kept.len());
                for x in implied_by(c) {
                    if !implied.contains(x) && !removed.contains(x) {
                        implied.push(*x);
                    }
                }
            }
            _ => kept.push(i),
        }
    }
    implied.retain(|x| !kept.iter().any(|i| capability_of(i) == Some(*x)));
    if let Some(at) = at {
        let declare = implied
            .into_iter()
            .map(|c| Instruction::new(rspirv::spirv::Op::Capability, None, None, vec![Operand::Capability(c)]));
        kept.splice(at..at, declare);
    }
    module.capabilities = kept;
    at.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rspirv::spirv::Op;

    fn declaring(caps: &[Capability]) -> Module {
        let mut m = Module::new();
        m.capabilities =
            caps.iter().map(|c| Instruction::new(Op::Capability, None, None, vec![Operand::Capability(*c)])).collect();
        m
    }

    fn declared(m: &Module) -> Vec<Capability> {
        m.capabilities.iter().filter_map(capability_of).collect()
    }

    #[test]
    fn the_implied_capability_takes_the_removed_ones_place() {
        let mut m = declaring(&[Capability::FragmentDensityEXT, Capability::ImageQuery]);
        assert!(remove(&mut m, &[Capability::FragmentDensityEXT]));
        assert_eq!(declared(&m), [Capability::Shader, Capability::ImageQuery]);
    }

    #[test]
    fn what_is_declared_already_is_not_declared_twice() {
        let mut m = declaring(&[
            Capability::Shader,
            Capability::FragmentShaderPixelInterlockEXT,
            Capability::FragmentShaderSampleInterlockEXT,
        ]);
        let interlock = [
            Capability::FragmentShaderSampleInterlockEXT,
            Capability::FragmentShaderPixelInterlockEXT,
            Capability::FragmentShaderShadingRateInterlockEXT,
        ];
        assert!(remove(&mut m, &interlock));
        assert_eq!(declared(&m), [Capability::Shader]);
        // Two removed capabilities implying the same one add it once.
        let mut m = declaring(&interlock);
        remove(&mut m, &interlock);
        assert_eq!(declared(&m), [Capability::Shader]);
    }

    #[test]
    fn nothing_to_remove_changes_nothing() {
        let mut m = declaring(&[Capability::Shader, Capability::Geometry]);
        assert!(!remove(&mut m, &[Capability::FragmentDensityEXT]));
        assert_eq!(declared(&m), [Capability::Shader, Capability::Geometry]);
    }
}
