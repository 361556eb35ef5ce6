//! Rigid-body dynamics over any [`Scalar`](crate::Scalar): forward kinematics, inverse dynamics
//! (RNEA) and its analytical derivatives, the mass matrix (CRBA) and its factorization, forward
//! dynamics (ABA), passive and actuator forces, motion on the configuration manifold, and the
//! integrators.

pub mod aba;
pub mod actuation;
pub mod constants;
pub mod crba;
pub mod energy;
pub mod fluid;
pub mod gravcomp;
pub mod implicit;
pub mod integrator;
pub mod kinematics;
mod kinematics_tangents;
pub mod mass;
mod muscle;
pub mod passive;
pub mod position;
pub mod rnea;
pub mod rnea_derivatives;
pub mod smooth;
pub mod tendon;
pub mod transmission;

pub use aba::forward_dynamics;
pub use actuation::actuator_forces;
pub use crba::mass_matrix;
pub use kinematics::{Kinematics, forward_kinematics, place_inertias};
pub use mass::{MassFactor, TreeMatrix};
pub use passive::passive_forces;
pub use position::{difference_position, integrate_position};
pub use rnea::{RootedLinks, add_link_forces, bias_forces, inverse_dynamics, rnea};
pub use rnea_derivatives::RneaDerivatives;
pub use smooth::Smooth;
pub use tendon::{DofRow, TendonJacobian, TendonKinematics};
