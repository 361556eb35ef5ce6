//! The rows of the equalities that tie two bodies (MuJoCo's `connect` and `weld`): each row's
//! violation, Jacobian and velocity-product term `J̇ v` at the current state, in `S`.
//!
//! A connect holds the two anchors `p₁`, `p₂` together: three rows `p₁ − p₂`. A weld also
//! holds the frames' orientations `q₁`, `q₂` together: three more rows, the vector part of
//! `q₂⁻¹ q₁` scaled by `torquescale`, whose Jacobian is `½ torquescale (s I − [v]×) R₂ᵀ (ω₁ − ω₂)` for
//! `q₂⁻¹ q₁ = (s, v)`. MuJoCo 4 subtracts `J̇ v` from each row's reference acceleration, so
//! the rows target the violation's true second derivative; phyz does the same.

use nalgebra::{DVector, Matrix3, Vector3};

use crate::Scalar;
use crate::dynamics::Kinematics;
use crate::dynamics::kinematics::add_relative_rows;
use crate::dynamics::kinematics::{link_bias_accelerations, link_velocities_into};
use crate::math::{Motion, Quat};
use crate::model::InverseWeights;
use crate::model::{Equality, Model};

/// One row of a tie (its Jacobian row is written beside it).
#[derive(Clone, Copy, Debug)]
pub(super) struct TieRow<S> {
    pub violation: S,
    /// `J̇ v`: the row's acceleration when every joint acceleration is zero.
    pub velocity_product: S,
    /// MuJoCo's `diagApprox`: the bodies' translational or rotational inverse weights.
    pub inverse_weight: S,
}

/// Every link's velocity and velocity-product acceleration (world frame), shared by the ties;
/// refilled at each evaluation, keeping its storage.
#[derive(Clone, Debug)]
pub(super) struct Motions<S> {
    velocity: Vec<Motion<S>>,
    bias: Vec<Motion<S>>,
}

impl<S> Default for Motions<S> {
    fn default() -> Self {
        Motions { velocity: Vec::new(), bias: Vec::new() }
    }
}

impl<S: Scalar> Motions<S> {
    /// The motions at the pose `kin` and velocity `v`.
    pub fn update(&mut self, model: &Model<S>, kin: &Kinematics<S>, v: &DVector<S>) {
        link_velocities_into(model, kin, v, &mut self.velocity);
        link_bias_accelerations(model, kin, &self.velocity, v, &mut self.bias);
        for ((velocity, bias), pose) in self.velocity.iter_mut().zip(&mut self.bias).zip(&kin.world) {
            *velocity = pose.motion_to_parent(velocity);
            *bias = pose.motion_to_parent(bias);
        }
    }

    /// A body's world-frame velocity and velocity-product acceleration (zero for the world).
    fn of(&self, model: &Model<S>, body: usize) -> (Motion<S>, Motion<S>) {
        model.tree().body_link[body].map_or((Motion::zero(), Motion::zero()), |l| (self.velocity[l], self.bias[l]))
    }

    /// The velocity-product acceleration of the point `p` (world) moving with `body`: the
    /// spatial acceleration there plus `ω × v_p`.
    fn point_bias(&self, model: &Model<S>, body: usize, p: &Vector3<S>) -> Vector3<S> {
        let (v, a) = self.of(model, body);
        a.lin + a.ang.cross(p) + v.ang.cross(&(v.lin + v.ang.cross(p)))
    }
}

/// A tie's two bodies, their anchors in the world, and the angular directions of a weld's
/// rotation rows (the torque a unit impulse on each applies to the first body; zero for a
/// connect).
#[derive(Clone, Copy, Debug)]
pub(super) struct TieEnds<S> {
    pub bodies: [usize; 2],
    pub points: [Vector3<S>; 2],
    pub turns: [Vector3<S>; 3],
}

/// The rows of a connect (`weld` false) or weld `equality` between `bodies` at the pose `kin`
/// and the motions `motions`: three for a connect, six for a weld (the first of the array),
/// their Jacobian rows added to `jacobian` (`nv` numbers each, zero on entry, room for six),
/// and the two bodies and their anchors in the world.
pub(super) fn tie_rows<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    motions: &Motions<S>,
    weights: &InverseWeights<S>,
    equality: &Equality<S>,
    (bodies, weld): ([usize; 2], bool),
    jacobian: &mut [S],
) -> ([TieRow<S>; 6], TieEnds<S>) {
    let nv = model.nv();
    let poses = bodies.map(|b| kin.body_pose(model, b));
    let points = [0, 1].map(|i| poses[i].transform_point(&equality.anchors[i]));
    // `J_{p₁} − J_{p₂}` along each axis: the first body's point taken from the second's.
    let axes = [Vector3::x(), Vector3::y(), Vector3::z()];
    let [first, second] = bodies;
    add_relative_rows(model, kin, [second, first], Some([&points[1], &points[0]]), &axes, &mut jacobian[..3 * nv]);
    let bias = motions.point_bias(model, first, &points[0]) - motions.point_bias(model, second, &points[1]);
    let translation = weights.body[first] + weights.body[second];
    let mut rows = [TieRow { violation: S::zero(), velocity_product: S::zero(), inverse_weight: S::zero() }; 6];
    for k in 0..3 {
        rows[k] =
            TieRow { violation: points[0][k] - points[1][k], velocity_product: bias[k], inverse_weight: translation };
    }
    let mut ends = TieEnds { bodies, points, turns: [Vector3::zeros(); 3] };
    if !weld {
        return (rows, ends);
    }
    // The frames' orientations and their relative rotation `q₂⁻¹ q₁ = (s, v)`.
    let frames = [0, 1].map(|i| poses[i].rot * equality.orientations[i].to_rotation_matrix());
    let relative = Quat::from_rotation_matrix(&(frames[1].transpose() * frames[0]));
    let (s, v) = (relative.w, relative.vector());
    let half = S::from_f64(0.5) * equality.torquescale;
    // Im(u · q_rel) = (s I − [v]×) u for a pure quaternion u: row k of `½ (s I − [v]×) R₂ᵀ`
    // against the relative angular velocity `ω₁ − ω₂`.
    let skew = Matrix3::new(S::zero(), -v.z, v.y, v.z, S::zero(), -v.x, -v.y, v.x, S::zero());
    let left = (Matrix3::identity() * s - skew) * frames[1].transpose() * half;
    let directions = [0, 1, 2].map(|k| left.row(k).transpose());
    add_relative_rows(model, kin, [second, first], None, &directions, &mut jacobian[3 * nv..6 * nv]);
    ends.turns = directions;
    let [(v1, a1), (v2, a2)] = bodies.map(|b| motions.of(model, b));
    let spin = v1.ang - v2.ang;
    // Each frame's rate in its own axes: `q̇ = ½ (0, ω) q = ½ q (0, Rᵀ ω)`.
    let rates = [frames[0].transpose() * v1.ang, frames[1].transpose() * v2.ang];
    let rotation_bias = weld_velocity_product(&relative, &frames[1], &spin, &(a1.ang - a2.ang), &rates) * half;
    let rotation = weights.body_rotation[first] + weights.body_rotation[second];
    for k in 0..3 {
        rows[3 + k] = TieRow {
            violation: equality.torquescale * v[k],
            velocity_product: rotation_bias[k],
            inverse_weight: rotation,
        };
    }
    (rows, ends)
}

/// The vector part of `d/dt [q₂⁻¹ (0, ω₁ − ω₂) q₁]` at zero joint accelerations, from
/// `q_rel = q₂⁻¹ q₁`, the second frame `R₂`, the relative rate and velocity-product
/// acceleration (world), and each frame's rate in its own axes `u = Rᵀ ω`:
/// `−½ u₂ (R₂ᵀ Δω) q_rel + (R₂ᵀ Δα) q_rel + ½ (R₂ᵀ Δω) q_rel u₁`.
fn weld_velocity_product<S: Scalar>(
    relative: &Quat<S>,
    second: &Matrix3<S>,
    spin: &Vector3<S>,
    spin_bias: &Vector3<S>,
    rates: &[Vector3<S>; 2],
) -> Vector3<S> {
    let pure = |u: Vector3<S>| Quat::new(S::zero(), u.x, u.y, u.z);
    let half = S::from_f64(0.5);
    let turning = pure(second.transpose() * spin);
    let first = pure(rates[1]) * turning * *relative;
    let middle = pure(second.transpose() * spin_bias) * *relative;
    let last = turning * *relative * pure(rates[0]);
    middle.vector() + (last.vector() - first.vector()) * half
}
