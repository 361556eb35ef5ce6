//! Analytical derivatives of inverse dynamics: `∂τ/∂q` and `∂τ/∂q̇` of `τ = RNEA(q, q̇, q̈)`.
//!
//! Pushing a tangent through every operation of the step (dual numbers, a tape) pays the whole
//! step once per direction. Carpentier and Mansard (RSS 2018) differentiate RNEA's recursions
//! instead; this is that idea in RNEA's link frames. A position perturbation `δ` of degree of
//! freedom `d` of link `j` changes only `j`'s transform from its parent, `X_j ← exp(−δ S_d×) X_j`
//! (every joint moves its link by a motion fixed in the link's frame), so the forward pass
//! changes on `j`'s subtree only, and the backward pass on that subtree and `j`'s ancestors. A
//! velocity perturbation enters at `j` the same way. Each column costs the links it reaches,
//! `O(nv · n)` at worst over all columns (besides one RNEA and clearing the two `nv × nv`
//! matrices per call), in plain arithmetic without any tangent bookkeeping.
//!
//! Positions are in tangent coordinates, as the step's Jacobians are (`q ⊕ δ`: a quaternion
//! turns by `δ` in its own frame, a free joint's position moves by `δ` in the world frame).

use nalgebra::{DMatrix, DVector};

use super::kinematics::{Kinematics, LinkBuffers, dofs};
use super::rnea::rnea;
use crate::Scalar;
use crate::math::{Force, Motion, zero_matrix, zero_vector};
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
    /// RNEA's link velocities, accelerations and subtree forces at the state.
    links: LinkBuffers<S>,
    /// Per link: its joint's velocity `S q̇`, the motion it inherits from its parent before its
    /// joint moves it (velocity and acceleration), its momentum `I v`.
    joint_velocity: Vec<Motion<S>>,
    inherited: Vec<(Motion<S>, Motion<S>)>,
    momentum: Vec<Force<S>>,
    /// One column's perturbation per link: velocity, acceleration, subtree force.
    tangent: Vec<(Motion<S>, Motion<S>, Force<S>)>,
    /// Whether the column's perturbation reaches each link.
    reached: Vec<bool>,
}

impl<S: Scalar> Default for RneaDerivatives<S> {
    fn default() -> Self {
        RneaDerivatives {
            tau: DVector::zeros(0),
            dq: DMatrix::zeros(0, 0),
            dv: DMatrix::zeros(0, 0),
            links: LinkBuffers::default(),
            joint_velocity: Vec::new(),
            inherited: Vec::new(),
            momentum: Vec::new(),
            tangent: Vec::new(),
            reached: Vec::new(),
        }
    }
}

impl<S: Scalar> RneaDerivatives<S> {
    /// Computes `τ`, `∂τ/∂q` and `∂τ/∂q̇` at the configuration of `kin`, velocity `qvel` and
    /// acceleration `qacc`, under the model's gravity.
    pub fn compute(&mut self, model: &Model<S>, kin: &Kinematics<S>, qvel: &DVector<S>, qacc: &DVector<S>) {
        self.run(model, kin, qvel, Some(qacc), 0..model.nv());
    }

    /// Computes only the columns `columns` (distinct) of `∂τ/∂q̇` (the rest of `dv` is zero; `dq` is left
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
        rnea(model, kin, qvel, qacc, &mut self.links, &mut self.tau);
        self.prepare(model, qvel, qacc);
        let position = qacc.is_some();
        let rows = if position { nv } else { 0 };
        zero_matrix(&mut self.dq, rows, rows);
        zero_matrix(&mut self.dv, nv, nv);
        for d in columns {
            let j = model.tree().dof_link[d];
            let s = model.constants().links.subspace[j].cols()[d - model.tree().links[j].dof_adr];
            let (v_in, a_in) = self.inherited[j];
            let (v, jv) = (self.links.velocity[j], self.joint_velocity[j]);
            if position {
                // X_j turns by −δ S×, so what j inherits turns by `inherited × S`.
                let dv_j = v_in.cross_motion(&s);
                let da_j = a_in.cross_motion(&s) + dv_j.cross_motion(&jv);
                let to_parent = s.cross_force(&self.links.force[j]);
                self.column(model, kin, j, (dv_j, da_j), to_parent, d, true);
            }
            // The joint's own velocity, and the bias acceleration it feeds.
            let da_j = s.cross_motion(&jv) + v.cross_motion(&s);
            self.column(model, kin, j, (s, da_j), Force::zero(), d, false);
        }
    }

    /// Each link's joint velocity, inherited motion and momentum at the state (after RNEA).
    fn prepare(&mut self, model: &Model<S>, qvel: &DVector<S>, qacc: Option<&DVector<S>>) {
        let links = &model.tree().links;
        let constants = &model.constants().links;
        self.joint_velocity.clear();
        self.inherited.clear();
        self.momentum.clear();
        for (i, link) in links.iter().enumerate() {
            let (v, a) = (self.links.velocity[i], self.links.acceleration[i]);
            let jv = constants.subspace[i].apply(dofs(link, qvel));
            let ja = qacc.map_or_else(Motion::zero, |qacc| constants.subspace[i].apply(dofs(link, qacc)));
            self.joint_velocity.push(jv);
            self.inherited.push((v - jv, a - ja - v.cross_motion(&jv)));
            self.momentum.push(constants.inertia[i].mul_motion(&v));
        }
        self.tangent.resize(links.len(), (Motion::zero(), Motion::zero(), Force::zero()));
        self.reached.resize(links.len(), false);
    }

    /// Carries a perturbation that enters link `j` as `(dv, da)` (and, moving `j`'s transform,
    /// adds `extra` to the force `j` passes to its parent) through both passes, and writes
    /// `∂τ` into column `column` of `dq` (`position`) or `dv`.
    #[allow(clippy::too_many_arguments)]
    fn column(
        &mut self,
        model: &Model<S>,
        kin: &Kinematics<S>,
        j: usize,
        (dv_j, da_j): (Motion<S>, Motion<S>),
        extra: Force<S>,
        column: usize,
        position: bool,
    ) {
        let links = &model.tree().links;
        let Self { dq, dv, links: state, joint_velocity, momentum, tangent, reached, .. } = self;
        let out = if position { dq } else { dv };
        // Forward: j's subtree (links are numbered parents first).
        reached[j] = true;
        for i in j..links.len() {
            let (dvi, dai) = if i == j {
                (dv_j, da_j)
            } else {
                reached[i] = links[i].parent.is_some_and(|p| p >= j && reached[p]);
                if !reached[i] {
                    continue;
                }
                let p = links[i].parent.unwrap_or(j);
                let x = &kin.local[i];
                let dvi = x.motion_to_child(&tangent[p].0);
                (dvi, x.motion_to_child(&tangent[p].1) + dvi.cross_motion(&joint_velocity[i]))
            };
            let inertia = &model.constants().links.inertia[i];
            let v = &state.velocity[i];
            let df =
                inertia.mul_motion(&dai) + dvi.cross_force(&momentum[i]) + v.cross_force(&inertia.mul_motion(&dvi));
            tangent[i] = (dvi, dai, df);
        }
        // Backward: the subtree's forces up to j, then j's ancestors.
        for i in (j..links.len()).rev() {
            if !reached[i] {
                continue;
            }
            let df = tangent[i].2;
            for (k, s) in model.constants().links.subspace[i].cols().iter().enumerate() {
                out[(links[i].dof_adr + k, column)] = s.dot(&df);
            }
            if i > j {
                let p = links[i].parent.unwrap_or(j);
                let carried = kin.local[i].force_to_parent(&df);
                tangent[p].2 += carried;
            }
            reached[i] = false;
        }
        let mut carried = kin.local[j].force_to_parent(&(tangent[j].2 + extra));
        let mut link = links[j].parent;
        while let Some(p) = link {
            for (k, s) in model.constants().links.subspace[p].cols().iter().enumerate() {
                out[(links[p].dof_adr + k, column)] = s.dot(&carried);
            }
            carried = kin.local[p].force_to_parent(&carried);
            link = links[p].parent;
        }
    }
}
