//! Default classes: `<default class="…">` trees whose element attributes are inherited by
//! elements that name the class (`class=`) or sit under a body with `childclass=`.

use std::collections::HashMap;

use super::element::{Element, Inherited};
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

/// The attributes that set an actuator's gain, bias and dynamics: MuJoCo keeps one default
/// actuator per class, and each actuator element in a default (of whatever kind) rewrites them.
const ACTUATOR_SHAPE: &[&str] = &[
    "kp",
    "kv",
    "dampratio",
    "timeconst",
    "inheritrange",
    "gainprm",
    "biasprm",
    "dynprm",
    "gaintype",
    "biastype",
    "dyntype",
    "area",
    "diameter",
    "bias",
];

/// Every class's inherited attributes, per group, and the actuator elements its defaults
/// wrote, in order (parent classes' first): their tags, and whether each set a gain, bias or
/// dynamics.
#[derive(Default)]
pub(super) struct Defaults {
    classes: HashMap<String, HashMap<&'static str, Inherited>>,
    actuator_writes: HashMap<String, Vec<Write>>,
}

/// An actuator element in a default: its tag, whether it shaped the class's default actuator
/// (any shortcut but a motor does, whatever it writes; a `general` or motor by writing a shape
/// attribute), and whether it wrote more of the shape than the gain and bias types (which
/// every shortcut element rewrites).
#[derive(Clone)]
struct Write {
    tag: String,
    shapes: bool,
    beyond_types: bool,
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
            let writes = defaults.actuator_writes.get(MAIN).cloned().unwrap_or_default();
            defaults.read_class(parsed, top, name, (inherited, writes))?;
        }
        Ok(defaults)
    }

    fn read_class<'a>(
        &mut self,
        parsed: &'a Parsed<'a>,
        at: Located<'a>,
        name: String,
        (mut class, mut writes): (HashMap<&'static str, Inherited>, Vec<Write>),
    ) -> Result<(), MjcfError> {
        let children = parsed.children(at);
        for &child in children.iter().filter(|c| !c.node.has_tag_name("default")) {
            let tag = child.node.tag_name().name();
            Element::new(child, None).check_attribute_names(&[attribute_rows(tag)])?;
            if group(tag) == Some("actuator") {
                let written = |types: bool| {
                    let mut names = child.node.attributes().map(|a| a.name());
                    names.any(|n| ACTUATOR_SHAPE.contains(&n) && (types || !matches!(n, "gaintype" | "biastype")))
                };
                let shortcut = !matches!(tag, "general" | "motor");
                writes.push(Write {
                    tag: tag.to_string(),
                    shapes: shortcut || written(true),
                    beyond_types: written(false),
                });
            }
            if let Some(group) = group(tag) {
                let entry = class.entry(group).or_default();
                for attribute in child.node.attributes() {
                    entry.insert(attribute.name().to_string(), attribute.value().to_string());
                }
            }
        }
        self.classes.insert(name.clone(), class.clone());
        self.actuator_writes.insert(name.clone(), writes.clone());
        for &child in children.iter().filter(|c| c.node.has_tag_name("default")) {
            let el = Element::new(child, None);
            el.check_attributes("default")?;
            let child_name = el.string("class").ok_or_else(|| el.invalid("a nested default needs a `class`"))?;
            if self.classes.contains_key(&child_name) {
                return Err(el.invalid(format!("default class `{child_name}` is defined twice")));
            }
            self.read_class(parsed, child, child_name, (class.clone(), writes.clone()))?;
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

    /// Whether an actuator element with tag `tag` in class `class` would start from a default
    /// actuator another kind of element shaped (its gain, bias or dynamics written, or rewritten
    /// after they were): MuJoCo's shortcuts then read that actuator's numbers, which phyz does
    /// not model. A motor always is one (MuJoCo's `mjs_setToMotor` sets all it reads).
    pub(super) fn mixed_actuator_shape(&self, class: &str, tag: &str) -> bool {
        let writes = self.actuator_writes.get(class).map_or(&[][..], |w| &w[..]);
        // A shortcut element rewrites the gain and bias types a `general` default set.
        let shaped = |w: &Write| if w.tag == "general" && tag != "general" { w.beyond_types } else { w.shapes };
        let shaped_elsewhere = writes.iter().any(|w| w.tag != tag && shaped(w));
        let first_shape = writes.iter().position(shaped);
        let rewritten = first_shape.is_some_and(|k| writes[k..].iter().any(|w| w.tag != tag));
        tag != "motor" && (shaped_elsewhere || rewritten)
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
