//! Rigid-body dynamics over any [`Scalar`](crate::Scalar): forward kinematics, inverse dynamics
//! (RNEA), the mass matrix (CRBA) and its factorization, forward dynamics (ABA), passive and
//! actuator forces, motion on the configuration manifold, and the integrators.

pub mod aba;
pub mod actuation;
pub mod crba;
pub mod energy;
pub mod fluid;
pub mod gravcomp;
pub mod implicit;
pub mod integrator;
pub mod kinematics;
pub mod mass;
mod muscle;
pub mod passive;
pub mod position;
pub mod rnea;
pub mod smooth;
pub mod tendon;
pub mod transmission;

pub use aba::forward_dynamics;
pub use actuation::actuator_forces;
pub use crba::mass_matrix;
pub use kinematics::{Kinematics, forward_kinematics};
pub use mass::{MassFactor, TreeMatrix};
pub use passive::passive_forces;
pub use position::{difference_position, integrate_position};
pub use rnea::{add_link_forces, bias_forces, inverse_dynamics, rnea};
pub use smooth::Smooth;
pub use tendon::{DofRow, TendonJacobian, TendonKinematics};

use nalgebra::DVector;

use crate::Scalar;
use crate::error::StepError;
use crate::model::{Model, State};

/// The unconstrained joint acceleration at `state` under `ctrl` as the step computes it:
/// kinematics, passive and actuator forces, the mass matrix and its factorization, bias forces
/// (MuJoCo's `qacc_smooth`). `extra_diagonal` is added to the mass matrix diagonal (see
/// [`forward_dynamics`], the articulated-body algorithm, which gives the same acceleration by an
/// independent route).
pub fn smooth_acceleration<S: Scalar>(
    model: &Model<S>,
    state: &State<S>,
    ctrl: &[S],
    extra_diagonal: Option<&DVector<S>>,
) -> Result<DVector<S>, StepError> {
    crate::model::check_input(model, state, ctrl)?;
    let mut smooth = Smooth::default();
    smooth.prepare(model, state);
    smooth.with_mass(model, state.point(), ctrl, extra_diagonal)?;
    Ok(smooth.acceleration)
}
