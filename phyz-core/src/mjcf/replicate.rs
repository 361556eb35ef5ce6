//! MuJoCo's `<replicate>`: `count` copies of what it holds, each placed by a frame that the
//! copies before it moved along (`offset`) and turned (`euler`), each name inside taking a
//! suffix (`sep` and the copy's index, zero-padded to the digits of `count`), as MuJoCo 4.0.1
//! attaches them.
//!
//! A tendon, actuator or sensor that references an element inside a replicate is copied for
//! each copy, its own name and those references taking the copy's suffix (an actuator on a
//! copied tendon is copied with it). In each section the elements that reference no copied
//! element come first, in document order; then, per replicate in document order and per copy,
//! those that reference its elements.

use std::collections::HashSet;
use std::path::PathBuf;
use std::rc::Rc;

use nalgebra::Vector3;

use super::element::Element;
use super::error::MjcfError;
use super::frame::{AngleSettings, euler_quat};
use super::source::Located;
use crate::math::Quat;

/// A kind of named element (`"body"`, `"joint"`, `"geom"`, `"site"`, `"tendon"`,
/// `"actuator"`) and a name.
pub(super) type Named = (&'static str, String);

/// How a replicate's copy renames what it reads: every name written takes `suffix`; a copied
/// element outside (`references` set) also renames its references to the elements of
/// `references`, by their names as written.
#[derive(Debug)]
pub(super) struct Rename {
    pub(super) suffix: String,
    /// The replicate (an index into the compiler's replicates, innermost for nested ones).
    pub(super) replicate: usize,
    pub(super) references: Option<Rc<HashSet<Named>>>,
}

impl Rename {
    /// The renamed value of attribute `attribute`, written `value`.
    pub(super) fn apply(&self, attribute: &str, value: &str) -> Option<String> {
        if attribute == "name" {
            return Some(format!("{value}{}", self.suffix));
        }
        let references = self.references.as_ref()?;
        let kinds = reference_kinds(attribute);
        kinds
            .iter()
            .any(|&kind| references.contains(&(kind, value.to_string())))
            .then(|| format!("{value}{}", self.suffix))
    }
}

/// A copy's frame in the replicate's parent (position, orientation) and its suffix.
pub(super) type CopyFrame = (Vector3<f64>, Quat<f64>, String);

/// A section element and the renaming of the copy it is read for (none: read as written).
pub(super) type Ordered<'a> = (Located<'a>, Option<Rc<Rename>>);

/// One `<replicate>` element as read: where it is written (file, offset), its copies'
/// renamings, in order (for a nested one, every copy of every enclosing copy), and the names
/// written inside it.
#[derive(Default)]
pub(super) struct Replicate {
    pub(super) origin: (PathBuf, usize),
    pub(super) copies: Vec<Rc<Rename>>,
    pub(super) names: HashSet<Named>,
}

/// The kinds of element an attribute names, where it references one.
fn reference_kinds(attribute: &str) -> &'static [&'static str] {
    match attribute {
        "joint" | "jointinparent" | "joint1" | "joint2" => &["joint"],
        "tendon" | "tendon1" | "tendon2" => &["tendon"],
        "site" | "refsite" | "cranksite" | "slidersite" | "sidesite" => &["site"],
        "body" | "body1" | "body2" => &["body"],
        "geom" | "geom1" | "geom2" => &["geom"],
        "actuator" => &["actuator"],
        "objname" | "refname" => &["body", "joint", "geom", "site", "tendon", "actuator"],
        _ => &[],
    }
}

/// The copies' frames (position and orientation in the replicate's parent frame) and
/// suffixes. Copy `k` is turned by `k · euler` and placed at the sum of `offset` turned by
/// each earlier copy's orientation.
pub(super) fn copies(el: &Element<'_, '_>, angles: &AngleSettings) -> Result<Vec<CopyFrame>, MjcfError> {
    let count = el.integer("count")?.ok_or_else(|| el.invalid("missing attribute `count`"))?;
    if count < 1 {
        return Err(el.invalid(format!("a replicate's count must be positive, not {count}")));
    }
    let offset = Vector3::from(el.array::<3>("offset")?.unwrap_or([0.0; 3]));
    let euler = Vector3::from(el.array::<3>("euler")?.unwrap_or([0.0; 3]));
    let separator = el.string("sep").unwrap_or_default();
    let digits = count.to_string().len();
    let mut pos = Vector3::zeros();
    Ok((0..count)
        .map(|k| {
            let quat = euler_quat(&(euler * k as f64), angles);
            let copy = (pos, quat, format!("{separator}{k:0digits$}"));
            pos += quat.rotate(&offset);
            copy
        })
        .collect())
}

/// A section's elements (the children of every `<tendon>`, `<actuator>` or `<sensor>`) in
/// MuJoCo's order, each with the renaming of its copy; the elements a copy adds to a
/// replicate (as `kind`) are added to its names, for the sections after.
pub(super) fn section<'a>(
    children: &[Located<'a>],
    kind: &'static str,
    replicates: &mut [Replicate],
) -> Result<Vec<Ordered<'a>>, MjcfError> {
    let mut plain = Vec::new();
    let mut copied: Vec<Vec<Located<'a>>> = vec![Vec::new(); replicates.len()];
    for &child in children {
        let referenced: Vec<usize> =
            (0..replicates.len()).filter(|&r| references(child, &replicates[r].names)).collect();
        match referenced[..] {
            [] => plain.push((child, None)),
            [r] => copied[r].push(child),
            _ => {
                let el = Element::new(child, None);
                return Err(el.unsupported("an element referencing the contents of two replicates"));
            }
        }
    }
    let mut out = plain;
    for (r, elements) in copied.into_iter().enumerate() {
        if elements.is_empty() {
            continue;
        }
        let references = Rc::new(replicates[r].names.clone());
        for copy in &replicates[r].copies {
            let rename =
                Rc::new(Rename { suffix: copy.suffix.clone(), replicate: r, references: Some(references.clone()) });
            out.extend(elements.iter().map(|&e| (e, Some(rename.clone()))));
        }
        let names = elements.iter().filter_map(|e| e.node.attribute("name")).map(|n| (kind, n.to_string()));
        replicates[r].names.extend(names);
    }
    Ok(out)
}

/// Whether `at` or an element inside it references one of `names`.
fn references(at: Located<'_>, names: &HashSet<Named>) -> bool {
    at.node
        .descendants()
        .filter(|n| n.is_element())
        .flat_map(|n| n.attributes())
        .any(|a| reference_kinds(a.name()).iter().any(|&kind| names.contains(&(kind, a.value().to_string()))))
}
