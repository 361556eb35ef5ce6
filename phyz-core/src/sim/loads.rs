//! What the motion and the constraint forces at a state load each body with, as MuJoCo's
//! `mj_rnePostConstraint` finds it: each body's acceleration (the world accelerating at `−g`),
//! the external wrenches of its contacts, connects and welds (`cfrc_ext`), and the wrench its
//! subtree gets from its parent (`cfrc_int`). The acceleration-stage sensors read them.

use nalgebra::{DVector, Vector3};

use super::gather::Gather;
use crate::collision::ray_hits_zone;
use crate::dynamics::kinematics::{Kinematics, place_inertias};
use crate::dynamics::rnea::{RootedLinks, rnea};
use crate::math::{Force, Motion, Pose};
use crate::model::Model;
use crate::{Mask, Scalar};

/// A force and a torque (about the world origin, world frame).
type ForceTorque<S> = (Vector3<S>, Vector3<S>);

/// A contact's normal force where it acts, for touch sensors.
struct ContactPush<S> {
    bodies: [usize; 2],
    point: Vector3<S>,
    normal: Vector3<S>,
    force: S,
}

/// The loads of every body at one state.
pub(super) struct Loads<S> {
    /// Each link's velocity and acceleration, and the rate of momentum of the subtree it
    /// carries (RNEA's backward sums), in the link's own frame.
    velocity: Vec<Motion<S>>,
    acceleration: Vec<Motion<S>>,
    force: Vec<Force<S>>,
    /// The external force and torque (about the world origin, world frame) on each body's
    /// subtree; the world's is zero (as MuJoCo's `cfrc_ext[0]`: it has no parent).
    external: Vec<ForceTorque<S>>,
    contacts: Vec<ContactPush<S>>,
}

/// The centre of mass of `body`'s subtree at the pose `kin` holds, world frame (MuJoCo's
/// `subtree_com`): the body's own centre where the subtree has no mass.
pub(super) fn subtree_centre<S: Scalar>(model: &Model<S>, kin: &Kinematics<S>, body: usize) -> Vector3<S> {
    let centre = |b: usize| kin.body_pose(model, b).transform_point(&model.bodies()[b].com);
    let (mut mass, mut moment) = (S::zero(), Vector3::zeros());
    for (b, part) in model.bodies().iter().enumerate().filter(|(b, _)| model.in_subtree(*b, body)) {
        mass += part.mass;
        moment += centre(b) * part.mass;
    }
    let heavy = mass.greater(S::from_f64(1e-15));
    let average = moment / S::select(heavy, mass, S::one());
    average.zip_map(&centre(body), |c, own| S::select(heavy, c, own))
}

/// Each body's own external force and torque (about the world origin, world frame) from the
/// gathered constraints' `impulses` over `dt`, the world's left zero (MuJoCo leaves its share
/// out of `cfrc_ext`), and each contact's normal push.
fn body_wrenches<S: Scalar>(
    model: &Model<S>,
    gather: &Gather<S>,
    impulses: &DVector<S>,
    dt: S,
) -> (Vec<ForceTorque<S>>, Vec<ContactPush<S>>) {
    let mut external = vec![(Vector3::zeros(), Vector3::zeros()); model.bodies().len()];
    let mut contacts = Vec::new();
    debug_assert_eq!(impulses.len(), gather.row_count(), "an impulse per gathered row");
    let mut at = 0;
    for g in &gather.list {
        let dim = g.kind.dim();
        let mut forces = [S::zero(); 6];
        for (f, &impulse) in forces.iter_mut().zip(&impulses.as_slice()[at..at + dim]) {
            *f = impulse / dt;
        }
        at += dim;
        let Some(w) = g.wrench.map(|w| &gather.wrenches[w]) else { continue };
        for side in (0..2).filter(|&side| w.bodies[side] != 0) {
            let (force, torque) = w.on(side, &forces);
            external[w.bodies[side]].0 += force;
            external[w.bodies[side]].1 += torque;
        }
        if let Some(normal) = w.normal {
            let force = w.rows.iter().zip(&forces).fold(S::zero(), |sum, (row, &f)| sum + row.0.dot(&normal) * f);
            contacts.push(ContactPush { bodies: w.bodies, point: w.points[1], normal, force });
        }
    }
    (external, contacts)
}

/// MuJoCo's `cfrc_ext` of the evaluation whose constraints `gather` holds at the pose `kin`
/// holds, under `impulses` over `dt`: each body's external wrench from its contacts, connects
/// and welds, torque then force, in world axes with the torque about the centre of mass of the
/// body's tree (MuJoCo's `subtree_com` of its root). The world's row is zero.
pub(super) fn external_wrenches<S: Scalar>(
    model: &Model<S>,
    kin: &Kinematics<S>,
    gather: &Gather<S>,
    impulses: &DVector<S>,
    dt: S,
) -> Vec<[S; 6]> {
    let bodies = model.bodies();
    let root = |mut b: usize| {
        while bodies[b].parent() != 0 {
            b = bodies[b].parent();
        }
        b
    };
    let (external, _) = body_wrenches(model, gather, impulses, dt);
    let mut centres: Vec<Option<Vector3<S>>> = vec![None; bodies.len()];
    let mut out = vec![[S::zero(); 6]; bodies.len()];
    for b in 1..bodies.len() {
        let r = root(b);
        let centre = *centres[r].get_or_insert_with(|| subtree_centre(model, kin, r));
        let (force, torque) = external[b];
        let torque = torque - centre.cross(&force);
        out[b] = [torque.x, torque.y, torque.z, force.x, force.y, force.z];
    }
    out
}

impl<S: Scalar> Loads<S> {
    /// The loads at the pose `kin` holds, velocity `qvel` and acceleration `qacc`, with the
    /// gathered constraints' `impulses` (one per row) over the step `dt`.
    pub fn new(
        model: &Model<S>,
        kin: &Kinematics<S>,
        (qvel, qacc): (&DVector<S>, &DVector<S>),
        gather: &Gather<S>,
        impulses: &DVector<S>,
        dt: S,
    ) -> Self {
        let (mut inertia, mut links) = (Vec::new(), RootedLinks::default());
        place_inertias(model, kin, &mut inertia);
        let mut tau = DVector::zeros(model.nv());
        rnea(model, kin, &inertia, (qvel, Some(qacc)), &mut links, &mut tau);
        // Into each link's own frame, with the kinematics RNEA ran at.
        let to_links =
            |motions: &[Motion<S>]| kin.rooted.iter().zip(motions).map(|(to, m)| to.motion_to_child(m)).collect();
        let (velocity, acceleration) = (to_links(&links.velocity), to_links(&links.acceleration));
        let force = kin.rooted.iter().zip(&links.force).map(|(to, f)| to.force_to_child(f)).collect();
        let (mut external, contacts) = body_wrenches(model, gather, impulses, dt);
        // About the world origin, wrenches add up the tree as they are (children come after
        // their parents).
        for b in (1..model.bodies().len()).rev().filter(|&b| model.bodies()[b].parent() != 0) {
            let (parent, (force, torque)) = (model.bodies()[b].parent(), external[b]);
            external[parent].0 += force;
            external[parent].1 += torque;
        }
        Loads { velocity, acceleration, force, external, contacts }
    }

    /// The acceleration of the point `pos` (in `body`'s frame) moving with the body, in the
    /// body's axes (a static body's is the world's, `−g`, as MuJoCo 4's).
    pub fn point_acceleration(&self, model: &Model<S>, body: usize, pos: &Vector3<S>) -> Vector3<S> {
        let Some(link) = model.tree().body_link[body] else { return -model.gravity_acceleration() };
        let (v, a) = (self.velocity[link], self.acceleration[link]);
        a.lin + a.ang.cross(pos) + v.ang.cross(&(v.lin + v.ang.cross(pos)))
    }

    /// The wrench `body` and its subtree get from the body's parent, in the body's frame
    /// (torque about its origin): the subtree's rate of momentum less its external wrenches.
    /// The world has no parent: see [`Loads::tree_wrenches`].
    pub fn interaction(&self, model: &Model<S>, kin: &Kinematics<S>, body: usize) -> Force<S> {
        let Some(link) = model.tree().body_link[body] else { return Force::zero() };
        let (force, torque) = self.external[body];
        self.force[link] - kin.body_pose(model, body).inverse().force_to_parent(&Force::new(torque, force))
    }

    /// Each tree's [`Loads::interaction`] by its root body (a child of the world), in the world
    /// frame with the torque about the world origin. MuJoCo sums these into the world's
    /// `cfrc_int`, each about its tree's centre of mass: the reader makes that shift.
    pub fn tree_wrenches<'a>(
        &'a self,
        model: &'a Model<S>,
        kin: &'a Kinematics<S>,
    ) -> impl Iterator<Item = (usize, Force<S>)> + 'a {
        let roots = (1..model.bodies().len()).filter(|&b| model.bodies()[b].parent() == 0);
        roots.map(move |b| (b, kin.body_pose(model, b).force_to_parent(&self.interaction(model, kin, b))))
    }

    /// The sum of the normal forces of the contacts of `body` that push into the zone of the
    /// site at `site` (world pose): those whose ray from the contact point along the normal,
    /// away from the body's side, meets the zone (MuJoCo's touch sensor).
    pub fn touch(&self, body: usize, site: &Pose<S>, zone: &crate::model::SiteZone) -> S {
        let mut sum = S::zero();
        for contact in self.contacts.iter().filter(|c| c.bodies.contains(&body)) {
            let direction = if contact.bodies[1] == body { -contact.normal } else { contact.normal };
            let origin = site.rot.transpose() * (contact.point - site.pos);
            let direction = site.rot.transpose() * direction;
            let lanes = contact.force.lanes().max(origin.x.lanes());
            let hits: Vec<bool> = (0..lanes)
                .map(|l| {
                    let real = |v: &Vector3<S>| Vector3::new(v.x.lane(l), v.y.lane(l), v.z.lane(l));
                    contact.force.lane(l) > 0.0 && ray_hits_zone(&real(&origin), &real(&direction), zone)
                })
                .collect();
            sum += S::select(S::Mask::from_lanes(&hits), contact.force, S::zero());
        }
        sum
    }
}
