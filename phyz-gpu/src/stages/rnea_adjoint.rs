//! The adjoint of inverse dynamics, one unit per world (`dynamics::rnea_derivatives`): given a
//! multiplier `λ` on the degrees of freedom, `λᵀ ∂τ/∂q` and `λᵀ ∂τ/∂q̇` of
//! `τ = RNEA(q, q̇, q̈)`, taken from the cotangents of `qpos` (tangent coordinates) and `qvel`.
//! The step's backward pulls its acceleration's cotangent through `K q̈ = f − τ` this way
//! ([`super::backward`]).
//!
//! It transcribes the CPU's analytical derivatives (Carpentier and Mansard's composites in each
//! tree's rooted frame; the CPU module's notes derive them): each link's composite inertia and
//! momentum rate matrix, each degree of freedom's vectors, and the entry of each dof `j` and
//! ancestor `k`, both ways. Each entry is summed against `λ` as it is made, so no `nv × nv`
//! matrix is stored: the cost is the CPU's, `O(nv · depth)` dot products.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, INERTIA, RATE, TERMS, dof_int, header, link_int};
use super::mass::{parent_of, row_of};
use super::real::{M3, V3};
use super::rnea::joint_velocity;
use super::world::{Inertia, Spatial, World, rates_acceleration, start};

/// Where each of a degree of freedom's vectors lies among its [`TERMS`] numbers: `Ic S` and
/// `Bcᵀ S` of its link's composites, and for a perturbation of its position and of its
/// velocity the `φ`, `ψ` and subtree force change of the CPU module's notes (a velocity's `ψ`
/// is the dof's motion itself, not stored).
pub mod term {
    pub const INERTIA_AXIS: usize = 0;
    pub const RATE_AXIS: usize = 6;
    pub const POSITION_PHI: usize = 12;
    pub const POSITION_PSI: usize = 18;
    pub const POSITION_SUBTREE: usize = 24;
    pub const VELOCITY_PHI: usize = 30;
    pub const VELOCITY_SUBTREE: usize = 36;
}

/// A momentum rate matrix `h ×̄ + v ×* I − I v ×` (`rnea_derivatives::momentum_rate`): how a
/// body's force `I a + v ×* I v` changes with its velocity. Its lower right block is zero; the
/// others are stored by rows, [`RATE`] numbers.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
pub struct Rate<F: Float> {
    pub upper: M3<F>,
    pub right: M3<F>,
    pub left: M3<F>,
}

#[cube]
impl<F: Float> Rate<F> {
    /// The rate matrix of a body of inertia `inertia` at velocity `v`, block by block as the CPU
    /// writes it out: `[ω]× Ī − Ī [ω]× − [n]×` and the first moment's terms above, `±turn − [f]×`
    /// beside and below (`h = I v = (n, f)`).
    pub fn momentum(inertia: &Inertia<F>, v: &Spatial<F>) -> Rate<F> {
        let h = inertia.mul_motion(v);
        let c = inertia.h.clone();
        let l = v.lin.clone();
        let p = M3::<F>::skew(&v.ang).mul(&inertia.matrix());
        let lc = l.dot(&c) * F::new(2.0);
        let upper = p
            .add(&p.transpose())
            .sub(&M3::<F>::outer(&l, &c).add(&M3::<F>::outer(&c, &l)))
            .add(&M3::<F>::identity().scale(lc))
            .sub(&M3::<F>::skew(&h.ang));
        let turn = M3::<F>::skew(&v.ang.cross(&c)).add(&M3::<F>::skew(&l.scale(inertia.mass)));
        let f = M3::<F>::skew(&h.lin);
        Rate::<F> { upper, right: turn.sub(&f), left: turn.scale(F::new(-1.0)).sub(&f) }
    }

    pub fn load(from: &mut Tensor<F>, at: usize, stride: usize) -> Rate<F> {
        Rate::<F> {
            upper: M3::load(from, at, stride),
            right: M3::load(from, at + 9 * stride, stride),
            left: M3::load(from, at + 18 * stride, stride),
        }
    }

    pub fn store(&self, to: &mut Tensor<F>, at: usize, stride: usize) {
        self.upper.store(to, at, stride);
        self.right.store(to, at + 9 * stride, stride);
        self.left.store(to, at + 18 * stride, stride);
    }

    pub fn add(&self, o: &Rate<F>) -> Rate<F> {
        Rate::<F> { upper: self.upper.add(&o.upper), right: self.right.add(&o.right), left: self.left.add(&o.left) }
    }

    /// `B m`, motion to force.
    pub fn times(&self, m: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> { ang: self.upper.apply(&m.ang).add(&self.right.apply(&m.lin)), lin: self.left.apply(&m.ang) }
    }

    /// `Bᵀ m`, as a force (to be dotted with motions).
    pub fn transpose_times(&self, m: &Spatial<F>) -> Spatial<F> {
        Spatial::<F> {
            ang: self.upper.apply_transpose(&m.ang).add(&self.left.apply_transpose(&m.lin)),
            lin: self.right.apply_transpose(&m.ang),
        }
    }
}

/// Subtracts `λᵀ ∂τ/∂q` from [`Array::AdjointQpos`] and `λᵀ ∂τ/∂q̇` from [`Array::AdjointQvel`],
/// `λ` in [`Array::Multiplier`], after the smooth stages (the composite inertias) and
/// `rnea::inverse_dynamics` (the link quantities at the acceleration the integrators read).
#[cube(launch_unchecked)]
pub(crate) fn inverse_dynamics_adjoint<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    composite_rates::<F>(ints, data, &world);
    dof_terms::<F>(ints, floats, data, &world);
    pull_back::<F>(ints, data, &world);
}

/// Each link's momentum rate matrix into [`Array::Rate`], then summed over its subtree.
#[cube]
fn composite_rates<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) {
    let n = world.count;
    let nlink = ints[header::LINKS] as usize;
    let inertia = start(ints, comptime![Array::Inertia as usize]);
    let velocity = start(ints, comptime![Array::Velocity as usize]);
    let rate = start(ints, comptime![Array::Rate as usize]);
    for i in 0..nlink {
        let body = Inertia::<F>::load(data, world.at(inertia, INERTIA * i), n);
        let v = Spatial::<F>::load(data, world.at(velocity, 6 * i), n);
        Rate::<F>::momentum(&body, &v).store(data, world.at(rate, RATE * i), n);
    }
    for r in 0..nlink {
        let i = nlink - 1 - r;
        let parent = ints[ints[header::LINK_INTS] as usize + i * link_int::LEN + link_int::PARENT] as usize;
        if parent > 0 {
            let p = world.at(rate, RATE * (parent - 1));
            let sum = Rate::<F>::load(data, p, n).add(&Rate::load(data, world.at(rate, RATE * i), n));
            sum.store(data, p, n);
        }
    }
}

/// Each degree of freedom's vectors into [`Array::Terms`] (`RneaDerivatives::dof_terms`): a
/// free joint's world dofs act as a massless link of their own before its rotations, so theirs
/// take the parent's velocity and acceleration, and the rotations' the motion after them.
#[cube]
fn dof_terms<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, world: &World) {
    let n = world.count;
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let qacc = rates_acceleration(ints);
    let motion = start(ints, comptime![Array::Motion as usize]);
    let velocity = start(ints, comptime![Array::Velocity as usize]);
    let acceleration = start(ints, comptime![Array::Acceleration as usize]);
    let force = start(ints, comptime![Array::LinkForce as usize]);
    let composite = start(ints, comptime![Array::Composite as usize]);
    let rate = start(ints, comptime![Array::Rate as usize]);
    let terms = start(ints, comptime![Array::Terms as usize]);
    let gravity = Spatial::<F> { ang: V3::zero(), lin: V3::<F>::load(floats, 0, 1).scale(F::new(-1.0)) };
    for l in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + l * link_int::LEN;
        let parent = ints[li + link_int::PARENT] as usize;
        let mut u = Spatial::<F>::zero();
        let mut w = gravity.clone();
        if parent > 0 {
            u = Spatial::load(data, world.at(velocity, 6 * (parent - 1)), n);
            w = Spatial::load(data, world.at(acceleration, 6 * (parent - 1)), n);
        }
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let turning = adr + ints[li + link_int::WORLD_DOFS] as usize;
        let after_v = u.add(&joint_velocity::<F>(data, world, motion, qvel, adr, turning));
        let after_w = w.add(&joint_velocity::<F>(data, world, motion, qacc, adr, turning));
        let links = Links::<F> {
            inertia: Inertia::load(data, world.at(composite, INERTIA * l), n),
            rate: Rate::load(data, world.at(rate, RATE * l), n),
            force: Spatial::load(data, world.at(force, 6 * l), n),
        };
        let v = Spatial::<F>::load(data, world.at(velocity, 6 * l), n);
        for d in adr..adr + ints[li + link_int::DOF_NUM] as usize {
            let axis = Spatial::<F>::load(data, world.at(motion, 6 * d), n);
            let at = world.at(terms, TERMS * d);
            if d < turning {
                store_terms::<F>(data, at, n, &links, &axis, &u, &w, &after_v);
            } else {
                store_terms::<F>(data, at, n, &links, &axis, &after_v, &after_w, &v);
            }
        }
    }
}

/// A link's subtree composites: inertia, momentum rate matrix, and the force it takes from its
/// parent.
#[derive(CubeType, CubeTypeMut, Clone)]
#[expand(derive(Clone))]
struct Links<F: Float> {
    inertia: Inertia<F>,
    rate: Rate<F>,
    force: Spatial<F>,
}

/// The vectors of a dof of motion `axis` on a link of composites `link`, the velocity `u` and
/// acceleration `w` before it and `v` its link's velocity (`rnea_derivatives::dof_terms`).
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_terms<F: Float>(
    data: &mut Tensor<F>,
    at: usize,
    n: usize,
    link: &Links<F>,
    axis: &Spatial<F>,
    u: &Spatial<F>,
    w: &Spatial<F>,
    v: &Spatial<F>,
) {
    let psi = u.cross_motion(axis);
    let phi = w.cross_motion(axis).add(&u.cross_motion(&psi));
    let subtree = axis.cross_force(&link.force).add(&link.inertia.mul_motion(&phi)).add(&link.rate.times(&psi));
    let velocity_phi = v.add(u).cross_motion(axis);
    let velocity_subtree = link.inertia.mul_motion(&velocity_phi).add(&link.rate.times(axis));
    link.inertia.mul_motion(axis).store(data, at + term::INERTIA_AXIS * n, n);
    link.rate.transpose_times(axis).store(data, at + term::RATE_AXIS * n, n);
    phi.store(data, at + term::POSITION_PHI * n, n);
    psi.store(data, at + term::POSITION_PSI * n, n);
    subtree.store(data, at + term::POSITION_SUBTREE * n, n);
    velocity_phi.store(data, at + term::VELOCITY_PHI * n, n);
    velocity_subtree.store(data, at + term::VELOCITY_SUBTREE * n, n);
}

/// The link of degree of freedom `d` and whether `d` is one of its world dofs (1) or not (0).
#[cube]
fn dof_place(ints: &Tensor<u32>, d: usize) -> (usize, u32) {
    let link = ints[ints[header::DOF_INTS] as usize + d * dof_int::LEN + dof_int::LINK] as usize;
    let li = ints[header::LINK_INTS] as usize + link * link_int::LEN;
    let mut in_world = 0u32;
    if d < ints[li + link_int::DOF_ADR] as usize + ints[li + link_int::WORLD_DOFS] as usize {
        in_world = 1u32;
    }
    (link, in_world)
}

/// `λᵀ ∂τ/∂q` and `λᵀ ∂τ/∂q̇` taken from the cotangents, entry by entry as
/// `RneaDerivatives::entries` makes them: each dof `j` with itself and each ancestor `k`, `τ_j`
/// along `k`'s perturbation (`j` is at or beyond `k`), and `τ_k` along `j`'s.
#[cube]
fn pull_back<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) {
    let n = world.count;
    let motion = start(ints, comptime![Array::Motion as usize]);
    let terms = start(ints, comptime![Array::Terms as usize]);
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    for j in 0..ints[header::DOFS] as usize {
        let at_j = world.at(terms, TERMS * j);
        let lambda_j = data[world.at(lambda, j)];
        let inertia_j = Spatial::<F>::load(data, at_j + term::INERTIA_AXIS * n, n);
        let rate_j = Spatial::<F>::load(data, at_j + term::RATE_AXIS * n, n);
        let axis_j = Spatial::<F>::load(data, world.at(motion, 6 * j), n);
        let place_j = dof_place(ints, j);
        let (_, depth) = row_of(ints, j);
        let mut k = j;
        for t in 0..depth {
            let at_k = world.at(terms, TERMS * k);
            let axis_k = Spatial::<F>::load(data, world.at(motion, 6 * k), n);
            let position_k = Spatial::<F>::load(data, at_k + term::POSITION_PHI * n, n).dot(&inertia_j)
                + Spatial::<F>::load(data, at_k + term::POSITION_PSI * n, n).dot(&rate_j);
            let velocity_k =
                Spatial::<F>::load(data, at_k + term::VELOCITY_PHI * n, n).dot(&inertia_j) + axis_k.dot(&rate_j);
            data[world.at(adjoint_q, k)] -= lambda_j * position_k;
            data[world.at(adjoint_v, k)] -= lambda_j * velocity_k;
            if t > 0 {
                let place_k = dof_place(ints, k);
                let mut position_j = axis_k.dot(&Spatial::<F>::load(data, at_j + term::POSITION_SUBTREE * n, n));
                let mut velocity_j = axis_k.dot(&Spatial::<F>::load(data, at_j + term::VELOCITY_SUBTREE * n, n));
                if place_k.0 == place_j.0 && place_k.1 == place_j.1 {
                    // On `j`'s link, its axis turns too.
                    let inertia_k = Spatial::<F>::load(data, at_k + term::INERTIA_AXIS * n, n);
                    let rate_k = Spatial::<F>::load(data, at_k + term::RATE_AXIS * n, n);
                    position_j = Spatial::<F>::load(data, at_j + term::POSITION_PHI * n, n).dot(&inertia_k)
                        + Spatial::<F>::load(data, at_j + term::POSITION_PSI * n, n).dot(&rate_k);
                    velocity_j = Spatial::<F>::load(data, at_j + term::VELOCITY_PHI * n, n).dot(&inertia_k)
                        + axis_j.dot(&rate_k);
                }
                let lambda_k = data[world.at(lambda, k)];
                data[world.at(adjoint_q, j)] -= lambda_k * position_j;
                data[world.at(adjoint_v, j)] -= lambda_k * velocity_j;
            }
            if t + 1 < depth {
                k = parent_of(ints, k) - 1;
            }
        }
    }
}
