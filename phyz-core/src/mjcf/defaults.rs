//! Default classes: `<default class="…">` trees whose element attributes are inherited by
//! elements that name the class (`class=`) or sit under a body with `childclass=`.

use std::collections::HashMap;

use super::actuator_record::Record;
use super::element::{Element, Inherited, PREFIX_WRITTEN, write_prefix};
use super::error::MjcfError;
use super::source::{Located, Parsed};

/// The class every element falls back to.
pub(super) const MAIN: &str = "main";

/// The default group an element tag reads from. All actuator shortcuts share one group, as in
/// MuJoCo, where they all set the class's single default actuator.
pub(super) fn group(tag: &str) -> Option<&'static str> {
    match tag {
        "joint" => Some("joint"),
        "geom" => Some("geom"),
        "site" => Some("site"),
        "fixed" | "spatial" | "tendon" => Some("tendon"),
        "equality" => Some("equality"),
        "pair" => Some("pair"),
        "mesh" => Some("mesh"),
        "general" | "motor" | "position" | "velocity" | "intvelocity" | "damper" | "cylinder" | "muscle"
        | "adhesion" => Some("actuator"),
        _ => None,
    }
}

/// The attribute table's element for a default's child `tag`: the element it sets defaults for.
fn attribute_rows(tag: &str) -> &str {
    match group(tag) {
        Some("actuator") => "actuator",
        Some(group) => group,
        None => tag,
    }
}

/// Every class's inherited attributes, per group, and its default actuator records: its own,
/// then its parents', nearest first.
#[derive(Default)]
pub(super) struct Defaults {
    classes: HashMap<String, HashMap<&'static str, Inherited>>,
    actuators: HashMap<String, Vec<Record>>,
}

impl Defaults {
    /// Reads the top-level `<default>` elements (and their nested classes).
    pub(super) fn read<'a>(parsed: &'a Parsed<'a>, tops: &[Located<'a>]) -> Result<Defaults, MjcfError> {
        let mut defaults = Defaults::default();
        defaults.classes.insert(MAIN.to_string(), HashMap::new());
        for &top in tops {
            let el = Element::new(top, None);
            el.check_attributes("default")?;
            let name = el.string("class").unwrap_or_else(|| MAIN.to_string());
            let inherited = defaults.classes.get(MAIN).cloned().unwrap_or_default();
            let mut records = defaults.actuators(MAIN);
            if name != MAIN {
                records.insert(0, records[0].clone());
            }
            defaults.read_class(parsed, top, name, (inherited, records))?;
        }
        Ok(defaults)
    }

    fn read_class<'a>(
        &mut self,
        parsed: &'a Parsed<'a>,
        at: Located<'a>,
        name: String,
        (mut class, mut records): (HashMap<&'static str, Inherited>, Vec<Record>),
    ) -> Result<(), MjcfError> {
        let children = parsed.children(at);
        for &child in children.iter().filter(|c| !c.node.has_tag_name("default")) {
            let tag = child.node.tag_name().name();
            Element::new(child, None).check_attribute_names(&[attribute_rows(tag)])?;
            if group(tag) == Some("actuator") {
                let (own, ancestors) = records.split_first_mut().expect("a class has its own record");
                own.apply(&Element::new(child, None), ancestors)?;
            }
            if let Some(group) = group(tag) {
                let entry = class.entry(group).or_default();
                for attribute in child.node.attributes() {
                    let (name, value) = (attribute.name(), attribute.value());
                    let value = match entry.get(name) {
                        Some(under) if PREFIX_WRITTEN.contains(&name) => write_prefix(under, value),
                        _ => value.to_string(),
                    };
                    entry.insert(name.to_string(), value);
                }
            }
        }
        self.classes.insert(name.clone(), class.clone());
        self.actuators.insert(name.clone(), records.clone());
        for &child in children.iter().filter(|c| c.node.has_tag_name("default")) {
            let el = Element::new(child, None);
            el.check_attributes("default")?;
            let child_name = el.string("class").ok_or_else(|| el.invalid("a nested default needs a `class`"))?;
            if self.classes.contains_key(&child_name) {
                return Err(el.invalid(format!("default class `{child_name}` is defined twice")));
            }
            let mut chain = vec![records[0].clone()];
            chain.extend(records.iter().cloned());
            self.read_class(parsed, child, child_name, (class.clone(), chain))?;
        }
        Ok(())
    }

    /// The attributes class `class` gives elements with tag `tag`; a class that does not exist is
    /// an error at the element `at`.
    pub(super) fn lookup<'a>(&self, at: Located<'a>, class: &str) -> Result<Option<&Inherited>, MjcfError> {
        let groups = self
            .classes
            .get(class)
            .ok_or_else(|| Element::new(at, None).invalid(format!("default class `{class}` does not exist")))?;
        Ok(group(at.node.tag_name().name()).and_then(|g| groups.get(g)))
    }

    /// The default actuator records of class `class`: its own, then its parents', nearest
    /// first (MuJoCo's plain record for a class that does not exist: [`Self::lookup`] names
    /// that error).
    pub(super) fn actuators(&self, class: &str) -> Vec<Record> {
        self.actuators.get(class).cloned().unwrap_or_else(|| vec![Record::default()])
    }

    /// An element read with the defaults of `group` rather than its tag's: the children of
    /// `<equality>` share the `equality` defaults whatever their tag.
    pub(super) fn element_in<'a>(&self, at: Located<'a>, group: &str) -> Result<Element<'a, '_>, MjcfError> {
        let class = at.node.attribute("class").unwrap_or(MAIN);
        let groups = self
            .classes
            .get(class)
            .ok_or_else(|| Element::new(at, None).invalid(format!("default class `{class}` does not exist")))?;
        Ok(Element::new(at, groups.get(group)))
    }

    /// An element, with the defaults of its own `class` or else the enclosing `childclass`.
    pub(super) fn element<'a>(&self, at: Located<'a>, childclass: &str) -> Result<Element<'a, '_>, MjcfError> {
        let class = at.node.attribute("class").unwrap_or(childclass);
        Ok(Element::new(at, self.lookup(at, class)?))
    }
}
