//! Actuator length ranges as MuJoCo's compiler finds them (`mj_setLengthRange`): a muscle
//! normalizes its length by the range its actuator can reach, which the compiler takes from
//! the element (`lengthrange`), from its joint's or tendon's limits (`uselimit`), or else by
//! simulation: pushing the actuator each way with a bounded acceleration, with gravity,
//! contacts, springs, dampers, dry friction and the other actuators off, the velocity bled away,
//! until it rests against the model's limits; the lengths it held over the last `interval`
//! seconds give each end.

use super::constants::moment;
use super::element::Element;
use super::error::MjcfError;
use crate::contact::SolverConfig;
use crate::dynamics::crba::mass_matrix;
use crate::dynamics::kinematics::Kinematics;
use crate::dynamics::mass::MassFactor;
use crate::model::{Enabled, Integrator, Model, Term, Transmission};
use crate::sim::{ContactState, Simulator};

/// MuJoCo's smallest meaningful value (`mjMINVAL`).
const MIN_VALUE: f64 = 1e-15;

/// Which actuators get a length range (`<lengthrange mode>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    None,
    Muscle,
    /// Muscles and user-defined actuators, which phyz refuses: the same as `Muscle` here.
    MuscleUser,
    All,
}

/// `<compiler><lengthrange>`: which actuators, and how the simulation runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Options {
    mode: Mode,
    /// Keep a range the element gives.
    use_existing: bool,
    /// Take a limited joint's or tendon's range.
    use_limit: bool,
    /// The acceleration the push aims at, and the largest force it may take (0: no bound).
    accel: f64,
    max_force: f64,
    /// The time constant with which velocity is bled away.
    time_constant: f64,
    /// The simulation's time step (0: the model's), its length, and the final interval whose
    /// lengths are kept.
    timestep: f64,
    total: f64,
    interval: f64,
    /// How far the kept lengths may spread, as a fraction of the range.
    tolerance: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Muscle,
            use_existing: true,
            use_limit: false,
            accel: 20.0,
            max_force: 0.0,
            time_constant: 1.0,
            timestep: 0.01,
            total: 10.0,
            interval: 2.0,
            tolerance: 0.05,
        }
    }
}

impl Options {
    /// Reads a `<lengthrange>` element over the defaults.
    pub(super) fn read(el: &Element<'_, '_>) -> Result<Options, MjcfError> {
        el.check_attributes("lengthrange")?;
        let d = Options::default();
        let mode = match el.keyword("mode", &["none", "muscle", "muscleuser", "all"])? {
            Some("none") => Mode::None,
            Some("muscleuser") => Mode::MuscleUser,
            Some("all") => Mode::All,
            _ => Mode::Muscle,
        };
        Ok(Options {
            mode,
            use_existing: el.boolean("useexisting")?.unwrap_or(d.use_existing),
            use_limit: el.boolean("uselimit")?.unwrap_or(d.use_limit),
            accel: el.number_or("accel", d.accel)?,
            max_force: el.number_or("maxforce", d.max_force)?,
            time_constant: el.number_or("timeconst", d.time_constant)?,
            timestep: el.number_or("timestep", d.timestep)?,
            total: el.number_or("inttotal", d.total)?,
            interval: el.number_or("interval", d.interval)?,
            tolerance: el.number_or("tolrange", d.tolerance)?,
        })
    }

    /// Whether actuator `index` gets its range computed.
    fn wanted(&self, model: &Model<f64>, index: usize) -> bool {
        let actuator = &model.actuators()[index];
        let muscle = matches!(actuator.gain, Term::Muscle(_)) || matches!(actuator.bias, Term::Muscle(_));
        let [lo, hi] = actuator.length_range;
        let wanted = match self.mode {
            Mode::None => false,
            Mode::Muscle | Mode::MuscleUser => muscle,
            Mode::All => true,
        };
        wanted && !(self.use_existing && lo < hi)
    }
}

/// Sets the length range of every actuator `options` asks for, as MuJoCo's compiler does; an
/// error (the actuator, and MuJoCo's words) when a simulation does not settle.
pub(super) fn resolve(model: &mut Model<f64>, options: &Options) -> Result<(), (usize, String)> {
    for index in 0..model.nu() {
        if !options.wanted(model, index) {
            continue;
        }
        let range = match options.use_limit.then(|| limit(model, index)).flatten() {
            Some(range) => range,
            None => simulate(model, index, options).map_err(|e| (index, e))?,
        };
        model.actuators_mut()[index].length_range = range;
    }
    Ok(())
}

/// The range of the limited joint or tendon actuator `index` drives directly.
fn limit(model: &Model<f64>, index: usize) -> Option<[f64; 2]> {
    match model.actuators()[index].transmission() {
        Transmission::Joint(j) | Transmission::JointInParent(j) => model.joints()[j].range,
        Transmission::Tendon(t) => model.tendons()[t].range,
        Transmission::Site { .. } | Transmission::SliderCrank { .. } => None,
    }
}

/// The model the simulation runs: MuJoCo's settings, and every actuator silent and without a
/// force range, the one pushed given its push as its bias at each step.
fn pushing_model(model: &Model<f64>, options: &Options) -> Model<f64> {
    let mut pushing = model.clone();
    // MuJoCo sets these flags, whatever the model's: every other one is on (actuation too,
    // since phyz pushes through the actuator where MuJoCo applies the force directly).
    pushing.enabled = Enabled {
        frictionloss: false,
        contact: false,
        spring: false,
        damper: false,
        gravity: false,
        ..Enabled::default()
    };
    if options.timestep > 0.0 {
        pushing.timestep = options.timestep;
    }
    // MuJoCo steps it in two halves, whose second integrates RK4 models by Euler.
    if pushing.integrator == Integrator::Rk4 {
        pushing.integrator = Integrator::Euler;
    }
    for actuator in pushing.actuators_mut() {
        (actuator.gain, actuator.bias) = (Term::Affine([0.0; 3]), Term::Affine([0.0; 3]));
        actuator.force_range = None;
    }
    for joint in pushing.joints_mut() {
        joint.actuator_force_range = None;
    }
    for tendon in pushing.tendons_mut() {
        tendon.actuator_force_range = None;
    }
    pushing
}

/// The push on actuator `index` at the simulator's state: `±accel / |M⁻¹ g|` along its
/// moment `g` (so that it accelerates at `accel`), bounded by `max_force` in norm; and the
/// actuator's length there.
fn push(sim: &Simulator<f64>, index: usize, sign: f64, options: &Options) -> Result<(f64, f64), String> {
    let model = &sim.model;
    let mut kin = Kinematics::default();
    kin.set_mocap(model, &sim.state.mocap_pos, &sim.state.mocap_quat);
    kin.update(model, &sim.state.qpos);
    let mut factor = MassFactor::default();
    factor.factorize(model, &mass_matrix(model, &kin)).map_err(|e| e.to_string())?;
    let (length, g) = moment(model, &kin, index, &sim.state.qpos);
    let mut force = sign * options.accel / factor.solve(&g).norm().max(MIN_VALUE);
    let size = force.abs() * g.norm();
    if options.max_force > 0.0 && size > options.max_force {
        force *= options.max_force / size.max(MIN_VALUE);
    }
    Ok((force, length))
}

/// Actuator `index`'s length range by simulation (MuJoCo's `evalAct` loop), or MuJoCo's error
/// when the range is empty or a side did not settle within the tolerance.
fn simulate(model: &Model<f64>, index: usize, options: &Options) -> Result<[f64; 2], String> {
    let mut sim = Simulator::new(pushing_model(model, options));
    let bleed = (-sim.model.timestep / options.time_constant.max(0.01)).exp();
    let ctrl = vec![0.0; model.nu()];
    let mut spans = [[0.0; 2]; 2];
    for (side, span) in spans.iter_mut().enumerate() {
        sim.state = sim.model.default_state();
        sim.contact = ContactState::new(SolverConfig::mujoco_compat());
        let (mut time, mut seen): (f64, Option<[f64; 2]>) = (0.0, None);
        while time < options.total {
            sim.state.qvel *= bleed;
            let (force, length) = push(&sim, index, if side == 0 { -1.0 } else { 1.0 }, options)?;
            sim.model.actuators_mut()[index].bias = Term::Affine([force, 0.0, 0.0]);
            sim.step(&ctrl).map_err(|e| format!("lengthrange simulation of actuator {index}: {e}"))?;
            time += sim.model.timestep;
            if time > options.total - options.interval {
                seen = Some(seen.map_or([length; 2], |[lo, hi]| [lo.min(length), hi.max(length)]));
            }
        }
        *span = seen.unwrap_or([0.0; 2]);
    }
    let range = [spans[0][0], spans[1][1]];
    let width = range[1] - range[0];
    if width <= 0.0 {
        return Err(format!("Invalid lengthrange ({}, {}) in actuator {index}", range[0], range[1]));
    }
    if let Some([lo, hi]) = spans.iter().find(|[lo, hi]| hi - lo > options.tolerance * width) {
        return Err(format!("Lengthrange computation did not converge in actuator {index}: eval ({lo}, {hi})"));
    }
    Ok(range)
}
