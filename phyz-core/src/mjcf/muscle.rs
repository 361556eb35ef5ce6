//! MuJoCo's muscle actuators as its compiler reads them: the `<muscle>` shortcut, and a
//! `<general>` whose gain or bias is of the muscle type (nine numbers: `range` (two), `force`,
//! `scale`, `lmin`, `lmax`, `vmax`, `fpmax`, `fvmax`).
//!
//! A negative `force` asks for the peak force `scale / acc0`, `acc0` the acceleration a unit
//! actuator force gives at the reference configuration: the term is read with `scale` in its
//! place, and the compiler's constants divide it ([`super::constants`]).

use super::element::Element;
use super::error::MjcfError;
use crate::model::{Dynamics, Muscle};

/// A muscle term as read, and its `scale` when its peak force is left to the constants.
pub(super) type ReadMuscle = (Muscle<f64>, Option<f64>);

/// MuJoCo's muscle defaults: time constants (activation, deactivation), then the nine numbers.
const TIME_CONSTANTS: [f64; 2] = [0.01, 0.04];
const NUMBERS: [f64; 9] = [0.75, 1.05, -1.0, 200.0, 0.5, 1.6, 1.5, 1.3, 1.2];
const NAMES: [&str; 7] = ["force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax"];

/// The `<muscle>` shortcut's term, for both gain and bias. As MuJoCo, a negative number (or
/// none) keeps the default.
pub(super) fn shortcut(el: &Element<'_, '_>) -> Result<ReadMuscle, MjcfError> {
    let mut numbers = NUMBERS;
    if let Some(range) = el.array::<2>("range")? {
        numbers[0] = chosen(range[0], NUMBERS[0]);
        numbers[1] = chosen(range[1], NUMBERS[1]);
    }
    for (k, name) in NAMES.iter().enumerate() {
        numbers[k + 2] = chosen(el.number_or(name, -1.0)?, NUMBERS[k + 2]);
    }
    term(el, &numbers)
}

/// The `<muscle>` shortcut's activation dynamics: `timeconst` (activation, deactivation) and
/// `tausmooth`.
pub(super) fn shortcut_dynamics(el: &Element<'_, '_>) -> Result<Dynamics<f64>, MjcfError> {
    let times = el.array::<2>("timeconst")?.unwrap_or([-1.0; 2]);
    let smoothing = el.number_or("tausmooth", 0.0)?;
    if smoothing < 0.0 {
        return Err(el.invalid("muscle tausmooth cannot be negative"));
    }
    Ok(Dynamics::Muscle {
        activation: chosen(times[0], TIME_CONSTANTS[0]),
        deactivation: chosen(times[1], TIME_CONSTANTS[1]),
        smoothing,
    })
}

/// A written number if it is not negative, else the default.
fn chosen(given: f64, default: f64) -> f64 {
    if given >= 0.0 { given } else { default }
}

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
