//! Kinematics with position tangents, written from the `f64` kinematics instead of being
//! recomputed in a tangent-carrying scalar.
//!
//! Moving degree of freedom `d` of link `j` by `δ` (`q ⊕ δ e_d`) turns `j` and every link
//! beyond it rigidly by `d`'s unit motion, `dof_motion[d]` (world axes, about the tree's root
//! origin); nothing else moves. So each pose's tangent is that twist applied to the pose, and
//! each degree of freedom's motion turns with its link (`T ×m m`). Forward-mode kinematics would
//! get the same numbers by carrying tangents through every product of the chain; this costs a
//! few products per link and direction.

use nalgebra::{DVector, Matrix3, Vector3};

use super::kinematics::Kinematics;
use crate::Scalar;
use crate::math::{Motion, Pose, mat3_mul, skew};
use crate::model::Model;

impl<S: Scalar> Kinematics<S> {
    /// Makes this value `kin` (the kinematics at the real part of `qpos`, in `f64`) with the
    /// tangents of moving degree of freedom `columns[k]` in tangent direction `k`; `qpos` carries
    /// the same tangents (`q ⊕ δ`), which the tendons' lengths read. Mocap bodies are where
    /// `kin` has them.
    pub fn set_along(&mut self, model: &Model<S>, kin: &Kinematics<f64>, qpos: &DVector<S>, columns: &[usize]) {
        let links = &model.tree().links;
        let lift = |p: &Pose<f64>| Pose::new(p.rot.map(S::from_f64), p.pos.map(S::from_f64));
        let lift_motion = |m: &Motion<f64>| Motion::new(m.ang.map(S::from_f64), m.lin.map(S::from_f64));
        for (to, from) in
            [(&mut self.local, &kin.local), (&mut self.world, &kin.world), (&mut self.rooted, &kin.rooted)]
        {
            to.clear();
            to.extend(from.iter().map(lift));
        }
        self.dof_motion.clear();
        self.dof_motion.extend(kin.dof_motion.iter().map(lift_motion));
        let mut reached = vec![false; links.len()];
        for (k, &d) in columns.iter().enumerate() {
            let j = model.tree().dof_link[d];
            let local = &kin.local[j];
            if links[j].world_range().contains(&d) {
                // A world dof moves the link along a world axis: its parent's frame is the world's.
                let axis = Vector3::from_fn(|r, _| if r == d - links[j].dof_adr { 1.0 } else { 0.0 });
                set_pose_tangent(&mut self.local[j], k, &Matrix3::zeros(), &axis);
            } else {
                // The link's own joint: `local · exp(δ S×)`, S in the link's frame.
                let s = model.constants().links.subspace[j].cols()[d - links[j].turning_range().start];
                let s = Motion::new(s.ang.map(|x| x.lane(0)), s.lin.map(|x| x.lane(0)));
                set_pose_tangent(&mut self.local[j], k, &(local.rot * skew(&s.ang)), &(local.rot * s.lin));
            }
            // Every link from j on turns by the twist t about the root origin, which itself
            // moves (by t's linear part) when j is the root link.
            let t = kin.dof_motion[d];
            let shift = if links[j].root == j { t.lin } else { Vector3::zeros() };
            let turn = skew(&t.ang);
            for i in j..links.len() {
                reached[i] = i == j || links[i].parent.is_some_and(|p| p >= j && reached[p]);
                if !reached[i] {
                    continue;
                }
                let pose = &kin.rooted[i];
                let (rot, moved) = (mat3_mul(&turn, &pose.rot), t.lin + t.ang.cross(&pose.pos));
                set_pose_tangent(&mut self.rooted[i], k, &rot, &(moved - shift));
                set_pose_tangent(&mut self.world[i], k, &rot, &moved);
                // The world dofs' motions never turn.
                for dof in links[i].turning_range() {
                    let m = kin.dof_motion[dof];
                    let turned = t.cross_motion(&m);
                    let change = Motion::new(turned.ang, turned.lin + m.ang.cross(&shift));
                    let Motion { ang, lin } = &mut self.dof_motion[dof];
                    ang.iter_mut().zip(change.ang.iter()).for_each(|(x, &dx)| x.set_tangent(0, k, dx));
                    lin.iter_mut().zip(change.lin.iter()).for_each(|(x, &dx)| x.set_tangent(0, k, dx));
                }
            }
            reached[j..].fill(false);
        }
        let mut tendons = std::mem::take(&mut self.tendons);
        tendons.update(model, self, qpos);
        self.tendons = tendons;
    }
}

/// Sets tangent direction `k` of `pose` to `(rot, pos)`.
fn set_pose_tangent<S: Scalar>(pose: &mut Pose<S>, k: usize, rot: &Matrix3<f64>, pos: &Vector3<f64>) {
    pose.rot.iter_mut().zip(rot.iter()).for_each(|(x, &dx)| x.set_tangent(0, k, dx));
    pose.pos.iter_mut().zip(pos.iter()).for_each(|(x, &dx)| x.set_tangent(0, k, dx));
}
