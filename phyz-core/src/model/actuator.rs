//! Actuators: controls to generalized forces.

use crate::Scalar;

/// An actuator on a hinge or slide joint, MuJoCo's affine model: with `c` the (clamped) control,
/// `l = gear·q` and `ℓ̇ = gear·q̇`, the actuator force is `gain·c + bias[0] + bias[1]·l + bias[2]·ℓ̇`
/// (clamped to `force_range`), applied to the joint as `gear·force`. A motor is `gain = 1`,
/// `bias = 0`; a position servo is `gain = kp`, `bias = [0, -kp, 0]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Actuator<S> {
    pub name: String,
    pub(crate) joint: usize,
    pub gear: S,
    pub gain: S,
    pub bias: [S; 3],
    /// Controls outside this range are clamped to it.
    pub ctrl_range: Option<[S; 2]>,
    /// Forces outside this range are clamped to it.
    pub force_range: Option<[S; 2]>,
}

impl<S: Scalar> Actuator<S> {
    /// Index of the joint this actuator drives.
    pub fn joint(&self) -> usize {
        self.joint
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Actuator<T> {
        Actuator {
            name: self.name.clone(),
            joint: self.joint,
            gear: f(self.gear),
            gain: f(self.gain),
            bias: self.bias.map(&mut *f),
            ctrl_range: self.ctrl_range.map(|[lo, hi]| [f(lo), f(hi)]),
            force_range: self.force_range.map(|[lo, hi]| [f(lo), f(hi)]),
        }
    }
}
