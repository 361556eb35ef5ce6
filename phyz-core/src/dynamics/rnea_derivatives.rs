//! Analytical derivatives of inverse dynamics: `∂τ/∂q` and `∂τ/∂q̇` of `τ = RNEA(q, q̇, q̈)`.
//!
//! Pushing a tangent through every operation of the step (dual numbers, a tape) pays the whole
//! step once per direction. Carpentier and Mansard (RSS 2018) differentiate RNEA's recursions
//! instead, with composite quantities that make each entry of the two matrices a few dot
//! products. This is that idea, derived here in each tree's rooted frame (world axes about the
//! root, [`Kinematics::rooted`]), where every quantity of every link can be compared without a
//! transform.
//!
//! Moving degree of freedom `k` (on link `κ`, its parent's velocity `u` and acceleration `w`)
//! by `δ` moves `κ` and everything beyond it rigidly by the twist `ξ = S_k δ` (positions are in
//! tangent coordinates: a quaternion turns in its own frame, a free joint's position moves in
//! the world frame). Were the parent's `u` and `w` carried along, every link force would turn
//! with the bodies (`δf = ξ ×* f`) and no joint torque beyond `κ` would change. They are not,
//! and the difference is, summed over a subtree `l` of `κ`:
//!
//! ```text
//! δF_l = ξ ×* F_l + Ic_l φ + Bc_l ψ,   φ = w × ξ + u × (u × ξ),   ψ = u × ξ,
//! ```
//!
//! `Ic_l` the composite inertia and `Bc_l = Σ (h ×̄ + v ×* I − I v ×)` the composite of each
//! body's momentum rate matrix (`h = I v`). A velocity perturbation `δq̇_k` gives the same form
//! without the turning term, with `φ = (v_κ + u) × S_k`, `ψ = S_k`. So, for `j` at or beyond
//! `κ` (its axis turns with the bodies, which cancels the turning term), and for `j` before `κ`
//! (its axis stays):
//!
//! ```text
//! j at or beyond κ:  ∂τ_j/∂q_k = (Ic_l S_j)·φ_k + (Bc_lᵀ S_j)·ψ_k   (l = j's link)
//! j before κ:        ∂τ_j/∂q_k = S_j · (S_k ×* F_κ + Ic_κ φ_k + Bc_κ ψ_k)
//! ```
//!
//! and the same for `∂τ_j/∂q̇_k` with the velocity's `φ`, `ψ` (no turning term). One RNEA, the
//! composites in one backward pass, and then a few dot products per entry of the mass matrix's
//! tree sparsity: `O(n·depth)`, in plain arithmetic, besides clearing the two `nv × nv` matrices.

use nalgebra::{DMatrix, DVector, Matrix3, Matrix6, Vector6};

use super::kinematics::{Kinematics, place_inertias};
use super::rnea::{RootedLinks, joint_motion, rnea};
use crate::Scalar;
use crate::math::{Force, Motion, SpatialInertia, mat3_mul, skew, zero_matrix, zero_vector};
use crate::model::Model;

/// The derivatives of inverse dynamics at one state, and the storage that computes them (reused
/// from call to call).
#[derive(Clone, Debug)]
pub struct RneaDerivatives<S> {
    /// `τ = M(q) q̈ + C(q, q̇)` (with armature), as [`rnea`] gives it.
    pub tau: DVector<S>,
    /// `∂τ/∂q` in tangent coordinates (`nv × nv`).
    pub dq: DMatrix<S>,
    /// `∂τ/∂q̇` (`nv × nv`).
    pub dv: DMatrix<S>,
    /// Each link's inertia in its tree's rooted frame, and RNEA's link velocities,
    /// accelerations and subtree forces at the state (the same frame).
    inertia: Vec<SpatialInertia<S>>,
    links: RootedLinks<S>,
    /// Per link, in its tree's rooted frame.
    rooted: Vec<Rooted<S>>,
    /// Per degree of freedom: what its entries are dot products of.
    dofs: Vec<DofTerms<S>>,
    /// The columns asked for.
    wanted: Vec<bool>,
}

/// One link's quantities in its tree's rooted frame.
#[derive(Clone, Copy, Debug)]
struct Rooted<S> {
    /// The link's velocity and acceleration (gravity's included).
    velocity: Motion<S>,
    acceleration: Motion<S>,
    /// The subtree's force, composite inertia and composite momentum rate matrix.
    force: Force<S>,
    inertia: SpatialInertia<S>,
    rate: Matrix6<S>,
}

/// One degree of freedom `d`'s vectors (see the module's notes), on link `l`: `Ic_l S_d`,
/// `Bc_lᵀ S_d`, and for the position's and the velocity's perturbations, `φ`, `ψ` and the
/// change of the subtree force at `l`.
#[derive(Clone, Copy, Debug)]
struct DofTerms<S> {
    inertia_axis: Force<S>,
    rate_axis: Force<S>,
    position: Perturbation<S>,
    velocity: Perturbation<S>,
}

#[derive(Clone, Copy, Debug)]
struct Perturbation<S> {
    phi: Motion<S>,
    psi: Motion<S>,
    subtree: Force<S>,
}

impl<S: Scalar> Perturbation<S> {
    /// `(Ic S_j)·φ + (Bcᵀ S_j)·ψ`: the entry for a degree of freedom `j` at or beyond the link.
    fn beyond(&self, terms: &DofTerms<S>) -> S {
        self.phi.dot(&terms.inertia_axis) + self.psi.dot(&terms.rate_axis)
    }
}

impl<S: Scalar> Default for RneaDerivatives<S> {
    fn default() -> Self {
        RneaDerivatives {
            tau: DVector::zeros(0),
            dq: DMatrix::zeros(0, 0),
            dv: DMatrix::zeros(0, 0),
            inertia: Vec::new(),
            links: RootedLinks::default(),
            rooted: Vec::new(),
            dofs: Vec::new(),
            wanted: Vec::new(),
        }
    }
}

impl<S: Scalar> RneaDerivatives<S> {
    /// Computes `τ`, `∂τ/∂q` and `∂τ/∂q̇` at the configuration of `kin`, velocity `qvel` and
    /// acceleration `qacc`, under the model's gravity.
    pub fn compute(&mut self, model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>, qacc: &DVector<S>) {
        self.run(model, kin, qvel, Some(qacc), 0..model.nv());
    }

    /// Computes only the columns `columns` of `∂τ/∂q̇` (the rest of `dv` is zero; `dq` is left
    /// empty, `tau` holds the bias forces): the derivative of the Coriolis and centrifugal forces,
    /// which does not depend on the acceleration.
    pub fn velocity_columns(
        &mut self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        qvel: &DVector<S>,
        columns: impl IntoIterator<Item = usize>,
    ) {
        self.run(model, kin, qvel, None, columns);
    }

    /// RNEA at the state, then the columns `columns` of `∂τ/∂q̇`, and of `∂τ/∂q` when `qacc` is
    /// given.
    fn run(
        &mut self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        qvel: &DVector<S>,
        qacc: Option<&DVector<S>>,
        columns: impl IntoIterator<Item = usize>,
    ) {
        let nv = model.nv();
        zero_vector(&mut self.tau, nv);
        place_inertias(model, kin, &mut self.inertia);
        rnea(model, kin, &self.inertia, (qvel, qacc), &mut self.links, &mut self.tau);
        self.composites(model);
        self.dof_terms(model, kin, qvel, qacc);
        self.wanted.clear();
        self.wanted.resize(nv, false);
        columns.into_iter().for_each(|c| self.wanted[c] = true);
        let position = qacc.is_some();
        let rows = if position { nv } else { 0 };
        zero_matrix(&mut self.dq, rows, rows);
        zero_matrix(&mut self.dv, nv, nv);
        self.entries(model, kin, position);
    }

    /// Each link's motion and the composites of its subtree, in its tree's rooted frame (after
    /// RNEA, whose forces are subtree sums).
    fn composites(&mut self, model: &Model<S>) {
        let links = &model.tree().links;
        self.rooted.clear();
        for i in 0..links.len() {
            let (velocity, acceleration) = (self.links.velocity[i], self.links.acceleration[i]);
            let (inertia, force) = (self.inertia[i], self.links.force[i]);
            let rate = momentum_rate(&inertia, &velocity);
            self.rooted.push(Rooted { velocity, acceleration, force, inertia, rate });
        }
        for (i, link) in links.iter().enumerate().rev() {
            if let Some(p) = link.parent {
                let (inertia, rate) = (self.rooted[i].inertia, self.rooted[i].rate);
                self.rooted[p].inertia = self.rooted[p].inertia + inertia;
                self.rooted[p].rate += rate;
            }
        }
    }

    /// Each degree of freedom's vectors, from its link's composites (the position's perturbation
    /// only where `qacc` is given). A free joint's world dofs act as a massless link of their own
    /// before its rotations: theirs is the parent's `u`, `w`, and the rotations' the motion after
    /// them.
    fn dof_terms(&mut self, model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>, qacc: Option<&DVector<S>>) {
        let tree = model.tree();
        let world_acc = Motion::new(nalgebra::Vector3::zeros(), -model.gravity_acceleration());
        self.dofs.clear();
        for (l, link) in tree.links.iter().enumerate() {
            // The parent's velocity `u` and acceleration `w` (the world's: at rest, gravity's).
            let parent = link.parent.map(|p| &self.rooted[p]);
            let (u, w) = parent.map_or((Motion::zero(), world_acc), |p| (p.velocity, p.acceleration));
            let world = joint_motion(kin, link.world_range(), qvel, qacc);
            let after = (u + world.velocity, w + world.acceleration);
            for d in link.dof_adr..link.dof_adr + link.dof_num {
                debug_assert_eq!(self.dofs.len(), d, "the links' degrees of freedom in order");
                let rooted = &self.rooted[l];
                let terms = if link.world_range().contains(&d) {
                    dof_terms(rooted, &kin.dof_motion[d], (u, w), &after.0, qacc.is_some())
                } else {
                    dof_terms(rooted, &kin.dof_motion[d], after, &rooted.velocity, qacc.is_some())
                };
                self.dofs.push(terms);
            }
        }
    }

    /// The entries of the wanted columns: each degree of freedom `j` with itself and each of its
    /// ancestors `k`, both ways.
    fn entries(&mut self, model: &Model<S>, kin: &Kinematics<S>, position: bool) {
        let tree = model.tree();
        let Self { dq, dv, dofs, wanted, .. } = self;
        for j in 0..model.nv() {
            let mut ancestor = Some(j);
            while let Some(k) = ancestor {
                // τ_j along k's perturbation: j is at or beyond k's link.
                if wanted[k] {
                    if position {
                        dq[(j, k)] = dofs[k].position.beyond(&dofs[j]);
                    }
                    dv[(j, k)] = dofs[k].velocity.beyond(&dofs[j]);
                }
                // τ_k along j's perturbation: k is on j's link (its axis turns too), or before it
                // (a free joint's world dofs are before its rotations).
                if k != j && wanted[j] {
                    let link = &tree.links[tree.dof_link[j]];
                    let beside = tree.dof_link[k] == tree.dof_link[j]
                        && link.world_range().contains(&k) == link.world_range().contains(&j);
                    let entry = |p: &Perturbation<S>| {
                        if beside { p.beyond(&dofs[k]) } else { kin.dof_motion[k].dot(&p.subtree) }
                    };
                    if position {
                        dq[(k, j)] = entry(&dofs[j].position);
                    }
                    dv[(k, j)] = entry(&dofs[j].velocity);
                }
                ancestor = tree.dof_parent[k];
            }
        }
    }
}

/// The vectors of a degree of freedom of motion `axis` on a link of composites `link`, the
/// velocity `u` and acceleration `w` before it, and `v` the velocity of its link.
fn dof_terms<S: Scalar>(
    link: &Rooted<S>,
    axis: &Motion<S>,
    (u, w): (Motion<S>, Motion<S>),
    v: &Motion<S>,
    position: bool,
) -> DofTerms<S> {
    let subtree = |phi: &Motion<S>, psi: &Motion<S>| link.inertia.mul_motion(phi) + times(&link.rate, psi);
    let position = if position {
        let psi = u.cross_motion(axis);
        let phi = w.cross_motion(axis) + u.cross_motion(&psi);
        Perturbation { phi, psi, subtree: axis.cross_force(&link.force) + subtree(&phi, &psi) }
    } else {
        Perturbation { phi: Motion::zero(), psi: Motion::zero(), subtree: Force::zero() }
    };
    let phi = (*v + u).cross_motion(axis);
    let velocity = Perturbation { phi, psi: *axis, subtree: subtree(&phi, axis) };
    let inertia_axis = link.inertia.mul_motion(axis);
    let rate_axis = transpose_times(&link.rate, axis);
    DofTerms { inertia_axis, rate_axis, position, velocity }
}

/// A body's momentum rate matrix at velocity `v`: `h ×̄ + v ×* I − I v ×` (`h = I v`), the
/// linear map `m ↦ m ×* h + v ×* (I m) − I (v × m)`: how its force `I a + v ×* I v` changes
/// with a change `m` of its velocity, the last term from the velocity product `v × S q̇` in
/// its acceleration. With `I = [Ī, [c]×; −[c]×, m]` (`c` the first moment, mass times the
/// centre of mass), `v = (ω, l)`
/// and `h = (n, f)`, its blocks are written out: `[ω]× Ī − Ī [ω]×` is `P + Pᵀ` with `P = [ω]× Ī`,
/// `[l]×[c]× + [c]×[l]×` is `l cᵀ + c lᵀ − 2 (l·c) 1`, and `[ω]×[c]× − [c]×[ω]×` is
/// `[ω × c]×`; the lower right block is zero.
fn momentum_rate<S: Scalar>(inertia: &SpatialInertia<S>, v: &Motion<S>) -> Matrix6<S> {
    let h = inertia.mul_motion(v);
    let (c, l) = (&inertia.first_moment, &v.lin);
    let p = mat3_mul(&skew(&v.ang), &inertia.rot_inertia);
    let lc = l.dot(c) * S::from_f64(2.0);
    let upper = Matrix3::from_fn(|i, j| {
        let diagonal = if i == j { lc } else { S::zero() };
        p[(i, j)] + p[(j, i)] - (l[i] * c[j] + c[i] * l[j]) + diagonal
    }) - skew(&h.ang);
    let turn = skew(&v.ang.cross(c)) + skew(l) * inertia.mass;
    let f = skew(&h.lin);
    let mut rate = Matrix6::zeros();
    rate.fixed_view_mut::<3, 3>(0, 0).copy_from(&upper);
    rate.fixed_view_mut::<3, 3>(0, 3).copy_from(&(turn - f));
    rate.fixed_view_mut::<3, 3>(3, 0).copy_from(&(-turn - f));
    rate
}

/// `m ↦ A m`, motion to force.
fn times<S: Scalar>(a: &Matrix6<S>, m: &Motion<S>) -> Force<S> {
    Force::from_vector(&(a * m.to_vector()))
}

/// `m ↦ Aᵀ m`, as a force (to be dotted with motions).
fn transpose_times<S: Scalar>(a: &Matrix6<S>, m: &Motion<S>) -> Force<S> {
    let v: Vector6<S> = a.tr_mul(&m.to_vector());
    Force::from_vector(&v)
}
