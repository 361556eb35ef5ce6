//! The adjoint of inverse dynamics, one unit per world (`dynamics::rnea_derivatives`): given a
//! multiplier `λ` on the degrees of freedom, `λᵀ ∂τ/∂q` and `λᵀ ∂τ/∂q̇` of
//! `τ = RNEA(q, q̇, q̈)`, taken from the cotangents of `qpos` (tangent coordinates) and `qvel`.
//! The step's backward pulls its acceleration's cotangent through `τ + h B q̈ = f` this way
//! ([`super::backward`]).
//!
//! It transcribes the CPU's analytical derivatives (Carpentier and Mansard's composites in each
//! tree's rooted frame; the CPU module's notes derive them): each link's composite inertia and
//! momentum rate matrix, each degree of freedom's vectors, and the entries of each dof `j` and
//! ancestor `k`, both ways, summed against `λ` through sums over the tree: no `nv × nv` matrix
//! is made, and the cost is `O(nv)` where the matrices' is `O(nv · depth)`.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, INERTIA, RATE, SUMS, TERMS, dof_int, header, link_int};
use super::mass::parent_of;
use super::real::M3;
use super::rnea::joint_velocity;
use super::world::{Inertia, Spatial, World, dynamics_acceleration, start, world_acceleration};

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

/// Where each of a degree of freedom's sums lies among its [`SUMS`] numbers
/// (`pull_back`): `Σ λ Ic S` and `Σ λ Bcᵀ S` over its subtree of dofs, and `Σ λ S` over its
/// strict ancestors.
pub mod sum {
    pub const INERTIA: usize = 0;
    pub const RATE: usize = 6;
    pub const ANCESTORS: usize = 12;
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
/// `rnea::inverse_dynamics` with the same `mass_only` (the link quantities at the acceleration
/// the integrators read; where `mass_only`, of `τ = M(q) u`, whose `∂τ/∂q̇` is zero).
#[cube(launch_unchecked)]
pub(crate) fn inverse_dynamics_adjoint<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
    #[comptime] mass_only: bool,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    composite_rates::<F>(ints, data, &world);
    dof_terms::<F>(ints, floats, data, &world, mass_only);
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
fn dof_terms<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    #[comptime] mass_only: bool,
) {
    let n = world.count;
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let qacc = dynamics_acceleration(ints, mass_only);
    let motion = start(ints, comptime![Array::Motion as usize]);
    let velocity = start(ints, comptime![Array::Velocity as usize]);
    let acceleration = start(ints, comptime![Array::Acceleration as usize]);
    let force = start(ints, comptime![Array::LinkForce as usize]);
    let composite = start(ints, comptime![Array::Composite as usize]);
    let rate = start(ints, comptime![Array::Rate as usize]);
    let terms = start(ints, comptime![Array::Terms as usize]);
    let mut gravity = world_acceleration::<F>(floats);
    if comptime![mass_only] {
        gravity = Spatial::<F>::zero();
    }
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
        let mut after_v = u.clone();
        if comptime![!mass_only] {
            after_v = u.add(&joint_velocity::<F>(data, world, motion, qvel, adr, turning));
        }
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

/// The first degree of freedom of `d`'s group on its link: its link's world dofs, or the rest.
/// The dofs of a group before `d` are the ancestors whose axes turn with `d`'s perturbation
/// (`RneaDerivatives::entries`' "beside"), and the group's start's own ancestors the others.
#[cube]
fn group_start(ints: &Tensor<u32>, d: usize) -> usize {
    let link = ints[ints[header::DOF_INTS] as usize + d * dof_int::LEN + dof_int::LINK] as usize;
    let li = ints[header::LINK_INTS] as usize + link * link_int::LEN;
    let adr = ints[li + link_int::DOF_ADR] as usize;
    let turning = adr + ints[li + link_int::WORLD_DOFS] as usize;
    let mut first = adr;
    if d >= turning {
        first = turning;
    }
    first
}

/// `λᵀ ∂τ/∂q` and `λᵀ ∂τ/∂q̇` taken from the cotangents: the entries `RneaDerivatives::entries`
/// makes, each dof `j` with itself and each ancestor `k` both ways, summed against `λ` by
/// sums over the tree rather than entry by entry (`O(nv)`, not `O(nv · depth)`).
///
/// - `τ_j` along `k`'s perturbation (`j` at or beyond `k`): `φ_k · Ic S_j + ψ_k · Bcᵀ S_j`, so
///   `k` takes `φ_k · Σ_j λ_j Ic S_j + ψ_k · Σ_j λ_j Bcᵀ S_j`, the sums over `k`'s subtree of
///   dofs, gathered from the leaves.
/// - `τ_k` along `j`'s (`k` a strict ancestor): for `k` beside `j` (before it in its group)
///   `φ_j · Ic S_k + ψ_j · Bcᵀ S_k`, and for the others, the group's start's ancestors,
///   `S_k · δF_j`: so `j` takes those against `Σ λ_k Ic S_k`, `Σ λ_k Bcᵀ S_k` over its group
///   before it, and `δF_j · Σ λ_k S_k` over its group start's ancestors, gathered from the
///   root.
#[cube]
fn pull_back<F: Float>(ints: &Tensor<u32>, data: &mut Tensor<F>, world: &World) {
    let n = world.count;
    let nv = ints[header::DOFS] as usize;
    let motion = start(ints, comptime![Array::Motion as usize]);
    let terms = start(ints, comptime![Array::Terms as usize]);
    let sums = start(ints, comptime![Array::Sums as usize]);
    let lambda = start(ints, comptime![Array::Multiplier as usize]);
    let adjoint_q = start(ints, comptime![Array::AdjointQpos as usize]);
    let adjoint_v = start(ints, comptime![Array::AdjointQvel as usize]);
    // Each dof's own weighted axes, then summed over its subtree (a dof's parent comes first);
    // and the weighted motions of its strict ancestors, from the root.
    for d in 0..nv {
        let (at, to) = (world.at(terms, TERMS * d), world.at(sums, SUMS * d));
        let l = data[world.at(lambda, d)];
        Spatial::<F>::load(data, at + term::INERTIA_AXIS * n, n).scale(l).store(data, to + sum::INERTIA * n, n);
        Spatial::<F>::load(data, at + term::RATE_AXIS * n, n).scale(l).store(data, to + sum::RATE * n, n);
        let parent = parent_of(ints, d);
        let mut above = Spatial::<F>::zero();
        if parent > 0 {
            let p = parent - 1;
            let motion_p = Spatial::<F>::load(data, world.at(motion, 6 * p), n).scale(data[world.at(lambda, p)]);
            above = Spatial::<F>::load(data, world.at(sums, SUMS * p) + sum::ANCESTORS * n, n).add(&motion_p);
        }
        above.store(data, to + sum::ANCESTORS * n, n);
    }
    for r in 0..nv {
        let d = nv - 1 - r;
        let parent = parent_of(ints, d);
        if parent > 0 {
            let (from, to) = (world.at(sums, SUMS * d), world.at(sums, SUMS * (parent - 1)));
            for part in 0..2 {
                let at = part * 6 * n;
                let sum = Spatial::<F>::load(data, to + at, n).add(&Spatial::load(data, from + at, n));
                sum.store(data, to + at, n);
            }
        }
    }
    for j in 0..nv {
        let (at, own) = (world.at(terms, TERMS * j), world.at(sums, SUMS * j));
        let axis = Spatial::<F>::load(data, world.at(motion, 6 * j), n);
        let position_phi = Spatial::<F>::load(data, at + term::POSITION_PHI * n, n);
        let position_psi = Spatial::<F>::load(data, at + term::POSITION_PSI * n, n);
        let velocity_phi = Spatial::<F>::load(data, at + term::VELOCITY_PHI * n, n);
        // Along j's own perturbation, τ of j's subtree of dofs (j included).
        let inertia = Spatial::<F>::load(data, own + sum::INERTIA * n, n);
        let rate = Spatial::<F>::load(data, own + sum::RATE * n, n);
        let mut dq = position_phi.dot(&inertia) + position_psi.dot(&rate);
        let mut dv = velocity_phi.dot(&inertia) + axis.dot(&rate);
        // τ of its strict ancestors: those beside it, then the others.
        let first = group_start(ints, j);
        let mut beside_inertia = Spatial::<F>::zero();
        let mut beside_rate = Spatial::<F>::zero();
        for k in first..j {
            let at_k = world.at(terms, TERMS * k);
            let l = data[world.at(lambda, k)];
            beside_inertia = beside_inertia.add(&Spatial::<F>::load(data, at_k + term::INERTIA_AXIS * n, n).scale(l));
            beside_rate = beside_rate.add(&Spatial::<F>::load(data, at_k + term::RATE_AXIS * n, n).scale(l));
        }
        let others = Spatial::<F>::load(data, world.at(sums, SUMS * first) + sum::ANCESTORS * n, n);
        dq += position_phi.dot(&beside_inertia)
            + position_psi.dot(&beside_rate)
            + others.dot(&Spatial::<F>::load(data, at + term::POSITION_SUBTREE * n, n));
        dv += velocity_phi.dot(&beside_inertia)
            + axis.dot(&beside_rate)
            + others.dot(&Spatial::<F>::load(data, at + term::VELOCITY_SUBTREE * n, n));
        data[world.at(adjoint_q, j)] -= dq;
        data[world.at(adjoint_v, j)] -= dv;
    }
}
