//! Global options: the medium the model moves in, and switches for parts of the physics.

use nalgebra::Vector3;

use crate::Scalar;

/// The surrounding medium (MJCF `<option density viscosity wind>`): when either density or
/// viscosity is positive, every body with mass feels MuJoCo's inertia-box fluid forces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Medium<S> {
    pub density: S,
    pub viscosity: S,
    pub wind: Vector3<S>,
}

impl<S: Scalar> Medium<S> {
    /// Vacuum: no fluid forces.
    pub fn vacuum() -> Self {
        Medium { density: S::zero(), viscosity: S::zero(), wind: Vector3::zeros() }
    }

    pub(crate) fn map<T: Scalar>(&self, f: &mut impl FnMut(S) -> T) -> Medium<T> {
        Medium { density: f(self.density), viscosity: f(self.viscosity), wind: self.wind.map(&mut *f) }
    }
}

/// MuJoCo's friction cone (MJCF `<option cone>`; MuJoCo's default is pyramidal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cone {
    /// Each friction direction's pair of edges `n ± μ t` as unilateral rows.
    #[default]
    Pyramidal,
    /// The soft elliptic cone over `[n, t1, t2]`.
    Elliptic,
}

/// How MuJoCo's contact model is set (MJCF `<option cone impratio>`). `mujoco_compat` solves
/// what these say; phyz's own presets solve the elliptic cone with their friction floor and
/// read neither.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactOptions {
    pub cone: Cone,
    /// The ratio of the friction rows' impedance to the normal row's: MuJoCo's friction
    /// regularizer is the normal one divided by it.
    pub impratio: f64,
    /// MuJoCo's no-slip pass after the solve, which `mujoco_compat` runs.
    pub noslip: NoSlip,
    /// Where MuJoCo's general convex narrow phase stops.
    pub ccd: CcdOptions,
}

impl Default for ContactOptions {
    fn default() -> Self {
        ContactOptions { cone: Cone::Pyramidal, impratio: 1.0, noslip: NoSlip::default(), ccd: CcdOptions::default() }
    }
}

/// Where MuJoCo's general convex narrow phase (GJK and EPA, `collision::ccd`) stops (MJCF
/// `<option ccd_tolerance ccd_iterations>`): a curved pair's penetration is MuJoCo's to within
/// the tolerance, so phyz stops where MuJoCo does.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcdOptions {
    pub tolerance: f64,
    pub iterations: usize,
}

impl Default for CcdOptions {
    /// MuJoCo's defaults.
    fn default() -> Self {
        CcdOptions { tolerance: 1e-6, iterations: 35 }
    }
}

/// MuJoCo's no-slip pass (MJCF `<option noslip_iterations noslip_tolerance>` and the
/// `island` flag): Gauss-Seidel sweeps over the friction impulses alone, without the soft
/// model's regularizer (`contact::noslip`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoSlip {
    /// The sweeps' budget; none (MuJoCo's default) runs no pass.
    pub iterations: usize,
    /// A constraint island stops once a sweep improves its cost by less (scaled as MuJoCo's).
    pub tolerance: f64,
    /// Whether each constraint island stops on its own (MuJoCo's default), or all stop together
    /// (`<flag island="disable"/>`).
    pub islands: bool,
}

impl Default for NoSlip {
    fn default() -> Self {
        NoSlip { iterations: 0, tolerance: 1e-6, islands: true }
    }
}

/// Which parts of the physics are on (MJCF `<option><flag>`); all on by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enabled {
    pub gravity: bool,
    /// Joint and tendon springs.
    pub spring: bool,
    /// Joint and tendon dampers.
    pub damper: bool,
    /// Fluid forces.
    pub fluid: bool,
    pub actuation: bool,
    /// Clamping of controls to their ranges.
    pub clamp_ctrl: bool,
    /// Euler's implicit integration of joint damping.
    pub euler_damp: bool,
    /// Every constraint (contacts, limits); off is MuJoCo's `constraint="disable"`.
    pub constraint: bool,
    pub contact: bool,
    pub limit: bool,
    /// Joints' dry friction (`frictionloss`).
    pub frictionloss: bool,
    /// Equality constraints.
    pub equality: bool,
    /// MuJoCo's `filterparent`: a body does not touch its parent (unless the parent is the
    /// world).
    pub filter_parent: bool,
}

impl Default for Enabled {
    fn default() -> Self {
        Enabled {
            gravity: true,
            spring: true,
            damper: true,
            fluid: true,
            actuation: true,
            clamp_ctrl: true,
            euler_damp: true,
            constraint: true,
            contact: true,
            limit: true,
            frictionloss: true,
            equality: true,
            filter_parent: true,
        }
    }
}
