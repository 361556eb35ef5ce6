//! MuJoCo's muscle terms as its compiler reads them (from an actuator record whose gain or
//! bias is of the muscle type): nine numbers, `range` (two), `force`, `scale`, `lmin`, `lmax`,
//! `vmax`, `fpmax`, `fvmax`.
//!
//! A negative `force` asks for the peak force `scale / acc0`, `acc0` the acceleration a unit
//! actuator force gives at the reference configuration: the term is read with `scale` in its
//! place, and the compiler's constants divide it ([`super::constants`]).

use super::element::Element;
use super::error::MjcfError;
use crate::model::Muscle;

/// A muscle term as read, and its `scale` when its peak force is left to the constants.
pub(super) type ReadMuscle = (Muscle<f64>, Option<f64>);

/// A muscle term from MuJoCo's nine numbers (the model builder checks the curves' numbers;
/// `scale`, which only the compiler reads, is checked here).
pub(super) fn term(el: &Element<'_, '_>, p: &[f64]) -> Result<ReadMuscle, MjcfError> {
    let [r0, r1, force, scale, lmin, lmax, vmax, fpmax, fvmax] = [p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]];
    if scale <= 0.0 {
        return Err(el.invalid("a muscle needs a positive scale"));
    }
    let automatic = force < 0.0;
    let muscle =
        Muscle { range: [r0, r1], force: if automatic { scale } else { force }, lmin, lmax, vmax, fpmax, fvmax };
    Ok((muscle, automatic.then_some(scale)))
}
