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

/// The contacts of a batch in slots, one contact or none per lane in each; refilled in place
/// (its slots keep their storage from one fill to the next).
#[derive(Clone, Debug, Default)]
pub struct ContactBuffer {
    /// `slots[k][lane]`, of which the first `used` are filled.
    slots: Vec<Vec<Option<Contact>>>,
    used: usize,
}

/// Buffers are equal when their filled slots are: the storage beyond them is not content.
impl PartialEq for ContactBuffer {
    fn eq(&self, other: &Self) -> bool {
        self.slots[..self.used] == other.slots[..other.used]
    }
}

impl ContactBuffer {
    /// Lays out the contacts each lane found (`found[lane]`) in at most `capacity` slots
    /// (`None`: as many as they need).
    pub fn new(found: Vec<Vec<Contact>>, capacity: Option<usize>) -> Result<Self, Overflow> {
        let mut buffer = ContactBuffer::default();
        buffer.fill(&found, capacity)?;
        Ok(buffer)
    }

    /// [`ContactBuffer::new`] in this buffer's storage.
    pub fn fill(&mut self, found: &[Vec<Contact>], capacity: Option<usize>) -> Result<(), Overflow> {
        let lanes = found.len();
        self.used = 0;
        for (lane, contacts) in found.iter().enumerate() {
            let mut next = 0;
            for contact in contacts {
                let fits = |slot: &Vec<Option<Contact>>| {
                    slot[lane].is_none()
                        && slot.iter().flatten().all(|o| {
                            o.condim == contact.condim
                                && o.flipped == contact.flipped
                                && o.tangent_body == contact.tangent_body
                                && o.anchor.same_structure(&contact.anchor)
                        })
                };
                let same = |slot: &Vec<Option<Contact>>| {
                    slot.iter().flatten().any(|o| o.geoms == contact.geoms && o.feature == contact.feature)
                };
                // A later slot (the lane's contacts keep their order): one this contact has
                // in another lane, else the first that fits, else a new one.
                let ahead = &self.slots[next..self.used];
                let chosen = ahead.iter().position(|s| fits(s) && same(s)).or_else(|| ahead.iter().position(fits));
                let k = match chosen {
                    Some(k) => next + k,
                    None => self.open(lanes),
                };
                self.slots[k][lane] = Some(contact.clone());
                next = k + 1;
            }
        }
        match capacity {
            Some(capacity) if self.used > capacity => Err(Overflow { needed: self.used, capacity }),
            _ => Ok(()),
        }
    }

    /// A new empty slot of `lanes` lanes; returns its index.
    fn open(&mut self, lanes: usize) -> usize {
        if self.used == self.slots.len() {
            self.slots.push(Vec::new());
        }
        let slot = &mut self.slots[self.used];
        slot.clear();
        slot.resize(lanes, None);
        self.used += 1;
        self.used - 1
    }

    /// The slots in order.
    pub fn slots(&self) -> impl Iterator<Item = Slot<'_>> {
        self.slots[..self.used].iter().map(|lanes| Slot { lanes })
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

    /// The contact of the first lane that has one (every slot has one).
    pub fn first(&self) -> &'a Contact {
        self.lanes.iter().flatten().next().expect("a slot holds a contact in some lane (ContactBuffer::fill)")
    }

    /// The contact of `lane`, if it has one.
    pub fn get(&self, lane: usize) -> Option<&'a Contact> {
        self.lanes[lane].as_ref()
    }

    /// The slot's anchor and tangent reference with one lane per environment, and its mask.
    pub fn lift<S: Scalar>(&self) -> Lifted<S> {
        if let [Some(only)] = self.lanes {
            // One lane (no batch): its contact's values as they are.
            let anchor = Anchor::lift(&[&only.anchor]).expect("one anchor shares its own structure");
            let tangent_ref = only.tangent_ref.map(S::from_f64);
            return Lifted { anchor, tangent_ref, tangent_body: only.tangent_body, present: S::Mask::splat(true) };
        }
        let contacts = self.contacts();
        let anchors: Vec<&Anchor> = contacts.iter().map(|c| &c.anchor).collect();
        let anchor = Anchor::lift(&anchors)
            .expect("a slot only takes contacts whose anchors share their structure (ContactBuffer::new)");
        let tangent_ref =
            Vector3::from_fn(|i, _| S::from_lanes(&contacts.iter().map(|c| c.tangent_ref[i]).collect::<Vec<_>>()));
        let present = S::Mask::from_lanes(&self.lanes.iter().map(Option::is_some).collect::<Vec<_>>());
        Lifted { anchor, tangent_ref, tangent_body: contacts[0].tangent_body, present }
    }
}
