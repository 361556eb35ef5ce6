//! Which geom pairs may touch: MuJoCo's rules.

use crate::Scalar;
use crate::model::{Geom, Model};

/// The body each body is rigidly attached to through welds: the nearest body on the path to the
/// root that has joints or is a mocap body, or the world (0) (MuJoCo's `body_weldid`).
fn weld_root<S: Scalar>(model: &Model<S>, mut body: usize) -> usize {
    let bodies = model.bodies();
    while body != 0 && bodies[body].joints().is_empty() && bodies[body].mocap().is_none() {
        body = bodies[body].parent();
    }
    body
}

/// MuJoCo's filter: geoms on bodies welded together never collide, nor do two without degrees
/// of freedom (static or mocap);
/// a body does not collide with its parent (unless the parent is the world) when the
/// `filterparent` rule is on (`Enabled::filter_parent`); `contype`/`conaffinity` must match; excluded body pairs never
/// collide.
pub fn can_collide<S: Scalar, T>(model: &Model<S>, b1: usize, g1: &Geom<T>, b2: usize, g2: &Geom<T>) -> bool {
    if (g1.contype & g2.conaffinity) == 0 && (g2.contype & g1.conaffinity) == 0 {
        return false;
    }
    let (w1, w2) = (weld_root(model, b1), weld_root(model, b2));
    let dofless = |w: usize| model.bodies()[w].joints().is_empty();
    if w1 == w2 || (dofless(w1) && dofless(w2)) {
        return false;
    }
    // A body does not touch its parent, unless the parent is the world.
    let parent_weld = |w: usize| weld_root(model, model.bodies()[w].parent());
    let parent_child =
        model.enabled.filter_parent && w1 != 0 && w2 != 0 && (parent_weld(w1) == w2 || parent_weld(w2) == w1);
    if parent_child {
        return false;
    }
    !model.contact_excludes().iter().any(|&[a, b]| (a == b1 && b == b2) || (a == b2 && b == b1))
}
