//! Actuators: controls to generalized forces.

use crate::Scalar;

/// What an actuator pulls on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmission {
    /// A hinge or slide joint, by index.
    Joint(usize),
    /// A fixed tendon, by index.
    Tendon(usize),
}

/// An actuator, MuJoCo's affine model. With `c` the (clamped) control, `l = gear·L` and
/// `l̇ = gear·L̇` (`L` the joint coordinate or tendon length), the actuator force is
/// `(gain[0] + gain[1]·l + gain[2]·l̇)·c + bias[0] + bias[1]·l + bias[2]·l̇`, clamped to
/// `force_range`, and reaches the joints as `gear · force · ∂L/∂q`. A motor is `gain = [1, 0, 0]`,
/// `bias = 0`; a position servo `gain = [kp, 0, 0]`, `bias = [0, -kp, -kv]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Actuator<S> {
    pub name: String,
    pub(crate) transmission: Transmission,
    pub gear: S,
    pub gain: [S; 3],
    pub bias: [S; 3],
    /// Controls outside this range are clamped to it.
    pub ctrl_range: Option<[S; 2]>,
    /// Forces outside this range are clamped to it.
    pub force_range: Option<[S; 2]>,
}

impl<S: Scalar> Actuator<S> {
    /// What this actuator drives.
    pub fn transmission(&self) -> Transmission {
        self.transmission
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Actuator<T> {
        Actuator {
            name: self.name.clone(),
            transmission: self.transmission,
            gear: f(self.gear),
            gain: self.gain.map(&mut *f),
            bias: self.bias.map(&mut *f),
            ctrl_range: self.ctrl_range.map(|r| r.map(&mut *f)),
            force_range: self.force_range.map(|r| r.map(&mut *f)),
        }
    }
}
