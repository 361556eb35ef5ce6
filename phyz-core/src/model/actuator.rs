//! Actuators: controls to generalized forces.

use crate::Scalar;

/// What an actuator pulls on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transmission {
    /// A joint, by index: a hinge or slide along its axis, a ball joint or free joint with the
    /// gear's torque in the joint's (child) frame and a free joint's force in the world's.
    Joint(usize),
    /// A ball or free joint whose gear's torque is in the parent's frame (MuJoCo's
    /// `jointinparent`; on a hinge or slide it is [`Transmission::Joint`]).
    JointInParent(usize),
    /// A fixed tendon, by index.
    Tendon(usize),
    /// A site (the `site`-th of body `body`): without a reference, a wrench at the site along
    /// the gear (force `gear[0..3]`, torque `gear[3..6]`, site axes); with one (MuJoCo's
    /// `refsite`), the site's translation and rotation relative to the reference site's frame,
    /// along the gear.
    Site { body: usize, site: usize, reference: Option<(usize, usize)> },
    /// MuJoCo's slider-crank: a rod of [`Actuator::crank_length`] from the crank site (body,
    /// site) to a slider that moves along the slider site's z axis; the length is the slider's
    /// position along that axis.
    SliderCrank { crank: (usize, usize), slider: (usize, usize) },
}

/// How an actuator's activation evolves (MuJoCo's `dyntype`). An actuator with dynamics has one
/// activation `a` in the state; its force law reads `a` where an actuator without reads the
/// control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dynamics<S> {
    /// No activation: the force reads the control directly.
    None,
    /// `ȧ = c`: the control is a rate (MuJoCo's `integrator`).
    Integrator,
    /// `ȧ = (c − a)/τ`, a first-order filter of the control with time constant `τ`, integrated
    /// like the rest of the state (`filter`) or exactly over the step (`filterexact`).
    Filter { time_constant: S, exact: bool },
    /// MuJoCo's muscle activation: a filter of the control (clipped to `[0, 1]`) whose time
    /// constant depends on the activation and on whether it rises (`activation`, scaled by
    /// `0.5 + 1.5a`) or falls (`deactivation`, divided by it); `smoothing` > 0 blends the two
    /// over that width of `c − a` instead of switching.
    Muscle { activation: S, deactivation: S, smoothing: S },
}

impl<S: Scalar> Dynamics<S> {
    /// Whether `other` is the same kind of dynamics, whatever its time constant.
    pub fn same_kind<T: Scalar>(&self, other: &Dynamics<T>) -> bool {
        match (self, other) {
            (Dynamics::None, Dynamics::None) | (Dynamics::Integrator, Dynamics::Integrator) => true,
            (Dynamics::Filter { exact: a, .. }, Dynamics::Filter { exact: b, .. }) => a == b,
            (Dynamics::Muscle { .. }, Dynamics::Muscle { .. }) => true,
            _ => false,
        }
    }

    fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Dynamics<T> {
        match *self {
            Dynamics::None => Dynamics::None,
            Dynamics::Integrator => Dynamics::Integrator,
            Dynamics::Filter { time_constant, exact } => Dynamics::Filter { time_constant: f(time_constant), exact },
            Dynamics::Muscle { activation, deactivation, smoothing } => {
                Dynamics::Muscle { activation: f(activation), deactivation: f(deactivation), smoothing: f(smoothing) }
            }
        }
    }
}

/// One of the two terms of an actuator's force law, `gain · input + bias`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Term<S> {
    /// `p[0] + p[1]·l + p[2]·l̇`, for the actuator's length `l` and velocity `l̇`.
    Affine([S; 3]),
    /// MuJoCo's muscle: as a gain, the active force-length-velocity curve; as a bias, the
    /// passive force-length curve; both negative (a muscle pulls).
    Muscle(Muscle<S>),
}

impl<S: Scalar> Term<S> {
    fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Term<T> {
        match self {
            Term::Affine(p) => Term::Affine(p.map(f)),
            Term::Muscle(m) => Term::Muscle(m.map(f)),
        }
    }
}

impl Term<f64> {
    /// The term's first number as MuJoCo stores it (`gainprm[0]`): an affine term's constant,
    /// a muscle's `range[0]`.
    pub fn first_number(&self) -> f64 {
        match self {
            Term::Affine(p) => p[0],
            Term::Muscle(m) => m.range[0],
        }
    }
}

/// Whether a gain and a bias make a position servo as MuJoCo's setpoint wrapping reads one: a
/// fixed gain `kp` (an affine gain without length or velocity terms) and an affine bias with
/// `−kp` on the length.
pub fn is_fixed_servo(gain: &Term<f64>, bias: &Term<f64>) -> bool {
    matches!((gain, bias), (Term::Affine(g), Term::Affine(b)) if g[0] == -b[1] && g[1..] == [0.0; 2])
}

/// MuJoCo's muscle parameters (its `gainprm`/`biasprm` for the muscle types). Lengths are
/// normalized by the optimal length `L0`, the one that maps the actuator's length range onto
/// `range`; velocities by `L0 · vmax`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Muscle<S> {
    /// The normalized lengths the actuator's length range maps onto.
    pub range: [S; 2],
    /// The peak active force (MuJoCo's `force`, or `scale / acc0` which the compiler resolves).
    pub force: S,
    /// The normalized lengths where the active force vanishes, below and above the optimum 1.
    pub lmin: S,
    pub lmax: S,
    /// The shortening velocity (in optimal lengths per second) at which the force vanishes.
    pub vmax: S,
    /// The passive force halfway from the optimal length to `lmax` is half of it, in peak
    /// forces (and it grows linearly beyond).
    pub fpmax: S,
    /// The active force's saturation when lengthening, in peak forces.
    pub fvmax: S,
}

impl<S: Scalar> Muscle<S> {
    /// The numbers, in a fixed order.
    pub fn numbers(&self) -> [S; 8] {
        let [lo, hi] = self.range;
        [lo, hi, self.force, self.lmin, self.lmax, self.vmax, self.fpmax, self.fvmax]
    }

    fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Muscle<T> {
        Muscle {
            range: self.range.map(&mut *f),
            force: f(self.force),
            lmin: f(self.lmin),
            lmax: f(self.lmax),
            vmax: f(self.vmax),
            fpmax: f(self.fpmax),
            fvmax: f(self.fvmax),
        }
    }
}

/// An actuator, MuJoCo's model. With `c` the (clamped) control, `l = gear·L` and
/// `l̇ = gear·L̇` (`L` the joint coordinate or tendon length, `gear` the first of the six gear
/// numbers; a site transmission uses all six), the actuator force is `gain·c + bias`, each
/// term affine (`gain = g[0] + g[1]·l + g[2]·l̇`) or a muscle's curve, clamped to
/// `force_range`, and reaches the joints as `gear · force · ∂L/∂q`. A motor is
/// `gain = Affine([1, 0, 0])`, `bias = Affine([0; 3])`; a position servo
/// `gain = Affine([kp, 0, 0])`, `bias = Affine([0, -kp, -kv])`.
#[derive(Clone, Debug, PartialEq)]
pub struct Actuator<S> {
    pub name: String,
    pub(crate) transmission: Transmission,
    pub gear: [S; 6],
    pub gain: Term<S>,
    pub bias: Term<S>,
    /// The range of the actuator's length `l` (MuJoCo's `lengthrange`): a muscle's lengths
    /// are normalized by it.
    pub length_range: [S; 2],
    /// A slider-crank's rod length (MuJoCo's `cranklength`; zero for other transmissions).
    pub crank_length: S,
    /// Controls outside this range are clamped to it.
    pub ctrl_range: Option<[S; 2]>,
    /// Forces outside this range are clamped to it.
    pub force_range: Option<[S; 2]>,
    pub dynamics: Dynamics<S>,
    /// Activations are clamped to this range after each step (MuJoCo's `actlimited`).
    pub act_range: Option<[S; 2]>,
    /// The force reads the activation the step will end with, not the current one (MuJoCo's
    /// `actearly`): it removes the one-step delay between a control and its force.
    pub act_early: bool,
    /// Index of this actuator's activation in [`State::act`](super::State::act), if it has one.
    pub(crate) act_adr: Option<usize>,
    /// For a servo (gain `kp`, bias `-kp` on the length, no filter) whose length is a rotation
    /// (a purely rotational site transmission with a reference site, a ball joint), where its
    /// three gear numbers that make the turn start: as MuJoCo 4, its setpoint is taken as the
    /// one of its turns (period `2π |gear[k..k + 3]|`) nearest the rotation it reads. Decided
    /// when built.
    pub(crate) setpoint_turn: Option<usize>,
}

impl<S: Scalar> Actuator<S> {
    /// What this actuator drives.
    pub fn transmission(&self) -> Transmission {
        self.transmission
    }

    /// Index of this actuator's activation in the state, if it has dynamics.
    pub fn act_adr(&self) -> Option<usize> {
        self.act_adr
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Actuator<T> {
        Actuator {
            name: self.name.clone(),
            transmission: self.transmission,
            gear: self.gear.map(&mut *f),
            gain: self.gain.map(&mut *f),
            bias: self.bias.map(&mut *f),
            length_range: self.length_range.map(&mut *f),
            crank_length: f(self.crank_length),
            ctrl_range: self.ctrl_range.map(|r| r.map(&mut *f)),
            force_range: self.force_range.map(|r| r.map(&mut *f)),
            dynamics: self.dynamics.map(f),
            act_range: self.act_range.map(|r| r.map(&mut *f)),
            act_early: self.act_early,
            act_adr: self.act_adr,
            setpoint_turn: self.setpoint_turn,
        }
    }
}
