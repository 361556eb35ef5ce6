//! Fixed-capacity, masked contact buffers: the contacts of a batch of environments, laid out so
//! that every lane runs one code path.
//!
//! Each environment (batch lane) finds its own contacts. The buffer puts them in slots: slot `k`
//! holds at most one contact per lane, and a lane without a contact there is masked off. All the
//! contacts of a slot share their structure (the kind of anchor, the bodies, the number of rows),
//! so the slot lifts into one anchor whose lanes hold each environment's numbers, and the
//! assembly builds its rows once for the whole batch. A contact seen in another lane (same geoms,
//! same feature) joins that lane's slot, so a batch whose environments touch alike fills as few
//! slots as its busiest lane needs; each lane's contacts keep their order, so a lane's solve sees
//! the problem its own run would. With one lane, the buffer is simply the contacts in order.

use nalgebra::Vector3;

use super::{Anchor, Contact};
use crate::Scalar;
use crate::scalar::Mask;

/// More contacts than a buffer has slots for.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("the batch's contacts need {needed} slots, more than the buffer's capacity of {capacity}")]
pub struct Overflow {
    pub needed: usize,
    pub capacity: usize,
}

/// The contacts of a batch in slots, one contact or none per lane in each.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactBuffer {
    /// `slots[k][lane]`.
    slots: Vec<Vec<Option<Contact>>>,
}

impl ContactBuffer {
    /// Lays out the contacts each lane found (`found[lane]`) in at most `capacity` slots
    /// (`None`: as many as they need).
    pub fn new(found: Vec<Vec<Contact>>, capacity: Option<usize>) -> Result<Self, Overflow> {
        let lanes = found.len();
        let mut slots: Vec<Vec<Option<Contact>>> = Vec::new();
        for (lane, contacts) in found.into_iter().enumerate() {
            // A lane's contacts keep their order (slots only move forward), so each lane's
            // constraints reach the solver exactly as its own run would give them.
            let mut next = 0;
            for contact in contacts {
                let fits = |slot: &Vec<Option<Contact>>| {
                    slot[lane].is_none()
                        && slot.iter().flatten().all(|o| {
                            o.condim == contact.condim
                                && o.tangent_body == contact.tangent_body
                                && o.anchor.same_structure(&contact.anchor)
                        })
                };
                let same = |slot: &Vec<Option<Contact>>| {
                    slot.iter().flatten().any(|o| o.geoms == contact.geoms && o.feature == contact.feature)
                };
                let ahead = &slots[next..];
                let chosen = ahead
                    .iter()
                    .position(|s| fits(s) && same(s))
                    .or_else(|| ahead.iter().position(fits))
                    .map(|k| next + k);
                let k = chosen.unwrap_or_else(|| {
                    slots.push(vec![None; lanes]);
                    slots.len() - 1
                });
                slots[k][lane] = Some(contact);
                next = k + 1;
            }
        }
        match capacity {
            Some(capacity) if slots.len() > capacity => Err(Overflow { needed: slots.len(), capacity }),
            _ => Ok(ContactBuffer { slots }),
        }
    }

    /// The slots in use, in order.
    pub fn slots(&self) -> impl Iterator<Item = Slot<'_>> {
        self.slots.iter().map(|lanes| Slot { lanes })
    }
}

/// One slot of a [`ContactBuffer`]: a contact, or none, per lane.
#[derive(Clone, Copy, Debug)]
pub struct Slot<'a> {
    lanes: &'a [Option<Contact>],
}

/// A slot lifted into the step's scalar.
#[derive(Clone, Debug)]
pub struct Lifted<S: Scalar> {
    pub anchor: Anchor<S>,
    /// In the world, or in `tangent_body`'s frame.
    pub tangent_ref: Vector3<S>,
    pub tangent_body: Option<usize>,
    /// Which lanes hold a contact.
    pub present: S::Mask,
}

impl<'a> Slot<'a> {
    /// The contact of each lane; a lane without one borrows the slot's first contact, to give
    /// every lane of the lifted anchor numbers (the assembly zeroes its rows by the mask).
    pub fn contacts(&self) -> Vec<&'a Contact> {
        let first = self.lanes.iter().flatten().next();
        self.lanes.iter().filter_map(|c| c.as_ref().or(first)).collect()
    }

    /// The contact of `lane`, if it has one.
    /// The contact of the first lane that has one (every slot has one).
    pub fn first(&self) -> &'a Contact {
        self.lanes.iter().flatten().next().expect("a slot holds a contact in some lane (ContactBuffer::new)")
    }

    pub fn get(&self, lane: usize) -> Option<&'a Contact> {
        self.lanes[lane].as_ref()
    }

    /// The slot's anchor and tangent reference with one lane per environment, and its mask.
    pub fn lift<S: Scalar>(&self) -> Lifted<S> {
        let contacts = self.contacts();
        let anchors: Vec<&Anchor> = contacts.iter().map(|c| &c.anchor).collect();
        let anchor = Anchor::lift(&anchors)
            .expect("a slot only takes contacts whose anchors share their structure (ContactBuffer::new)");
        let (tangent_ref, present) = match (contacts.as_slice(), self.lanes.len()) {
            // One lane (no batch): its contact's values as they are.
            ([only], 1) => (only.tangent_ref.map(S::from_f64), S::Mask::splat(true)),
            _ => (
                Vector3::from_fn(|i, _| S::from_lanes(&contacts.iter().map(|c| c.tangent_ref[i]).collect::<Vec<_>>())),
                S::Mask::from_lanes(&self.lanes.iter().map(Option::is_some).collect::<Vec<_>>()),
            ),
        };
        Lifted { anchor, tangent_ref, tangent_body: contacts[0].tangent_body, present }
    }
}
