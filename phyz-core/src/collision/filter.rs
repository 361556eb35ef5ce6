//! Which geom pairs may touch: MuJoCo's rules.

use crate::Scalar;
use crate::model::{Geom, Model};

/// MuJoCo's filter: geoms on bodies welded together never collide, nor do two without degrees
/// of freedom (static or mocap);
/// a body does not collide with its parent (unless the parent is the world) when the
/// `filterparent` rule is on (`Enabled::filter_parent`); `contype`/`conaffinity` must match; excluded body pairs never
/// collide.
pub fn can_collide<S: Scalar, T>(model: &Model<S>, b1: usize, g1: &Geom<T>, b2: usize, g2: &Geom<T>) -> bool {
    if (g1.contype & g2.conaffinity) == 0 && (g2.contype & g1.conaffinity) == 0 {
        return false;
    }
    let weld = &model.tree().body_weld;
    let (w1, w2) = (weld[b1], weld[b2]);
    let dofless = |w: usize| model.bodies()[w].joints().is_empty();
    if w1 == w2 || (dofless(w1) && dofless(w2)) {
        return false;
    }
    // A body does not touch its parent, unless the parent is the world.
    let parent_weld = |w: usize| weld[model.bodies()[w].parent()];
    let parent_child =
        model.enabled.filter_parent && w1 != 0 && w2 != 0 && (parent_weld(w1) == w2 || parent_weld(w2) == w1);
    if parent_child {
        return false;
    }
    !model.contact_excludes().iter().any(|&[a, b]| (a == b1 && b == b2) || (a == b2 && b == b1))
}
