//! Reading one element: its attributes (own, else from its default class), parsed into numbers
//! and keywords, every failure located at the element.

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use roxmltree::Node;

use super::attributes::{self, Neutral, Treatment};
use super::error::{Location, MjcfError, MjcfErrorKind, Unsupported};
use super::replicate::Rename;
use super::source::Located;

pub(super) fn location(file: &Path, node: &Node<'_, '_>) -> Location {
    let pos = node.document().text_pos_at(node.range().start);
    Location { file: file.to_path_buf(), line: pos.row, column: pos.col, element: node.tag_name().name().to_string() }
}

/// Attribute values inherited from a default class, by attribute name.
pub(super) type Inherited = HashMap<String, String>;

/// The attributes MuJoCo reads as "up to N numbers": a value with fewer numbers rewrites only
/// the first ones of what its default class gave (`friction="2"` under a class's
/// `friction="1 0.3 0.02"` reads `2 0.3 0.02`), in a class as on an element.
pub(super) const PREFIX_WRITTEN: &[&str] = &[
    "size",
    "friction",
    "solref",
    "solimp",
    "solreflimit",
    "solimplimit",
    "solreffriction",
    "solimpfriction",
    "polycoef",
    "gear",
    "gainprm",
    "biasprm",
    "dynprm",
];

/// `written` over the first words of `under`, for an attribute of [`PREFIX_WRITTEN`].
pub(super) fn write_prefix(under: &str, written: &str) -> String {
    let mut words: Vec<&str> = written.split_whitespace().collect();
    words.extend(under.split_whitespace().skip(words.len()));
    words.join(" ")
}

/// An element and the defaults that apply to it.
pub(super) struct Element<'a, 'd> {
    pub(super) at: Located<'a>,
    defaults: Option<&'d Inherited>,
    /// The renaming of the replicate copy this element is read in, if any.
    rename: Option<Rc<Rename>>,
}

impl<'a, 'd> Element<'a, 'd> {
    pub(super) fn new(at: Located<'a>, defaults: Option<&'d Inherited>) -> Self {
        Element { at, defaults, rename: None }
    }

    /// The element as read in a replicate's copy: its name, and its references to the copy's
    /// elements, renamed.
    pub(super) fn renamed(self, rename: Option<Rc<Rename>>) -> Self {
        Element { rename, ..self }
    }

    /// The renaming the element is read with.
    pub(super) fn rename(&self) -> Option<&Rc<Rename>> {
        self.rename.as_ref()
    }

    pub(super) fn tag(&self) -> &'a str {
        self.at.node.tag_name().name()
    }

    pub(super) fn location(&self) -> Location {
        location(self.at.file, &self.at.node)
    }

    pub(super) fn invalid(&self, message: impl Into<String>) -> MjcfError {
        MjcfError { location: self.location(), kind: MjcfErrorKind::Invalid(message.into()) }
    }

    pub(super) fn unsupported(&self, message: impl Into<String>) -> MjcfError {
        let kind = MjcfErrorKind::Unsupported(Unsupported { what: message.into(), attribute: None });
        MjcfError { location: self.location(), kind }
    }

    /// An unsupported value of the attribute `name` (the rest of the element is supported).
    pub(super) fn unsupported_attribute(&self, name: &str, message: impl Into<String>) -> MjcfError {
        let kind = MjcfErrorKind::Unsupported(Unsupported { what: message.into(), attribute: Some(name.to_string()) });
        MjcfError { location: self.location(), kind }
    }

    /// Every attribute written on the element must be accepted for `element` (a key of the
    /// [attribute table](super::attributes)), and each the table refuses must be neutral (as
    /// written here or inherited from a default class).
    pub(super) fn check_attributes(&self, element: &str) -> Result<(), MjcfError> {
        self.check_attributes_of(&[element])
    }

    /// An element that takes no attributes.
    pub(super) fn check_no_attributes(&self) -> Result<(), MjcfError> {
        self.check_attributes_of(&[])
    }

    /// [`Self::check_attributes`] against the union of several elements' rows.
    pub(super) fn check_attributes_of(&self, elements: &[&str]) -> Result<(), MjcfError> {
        self.check_attribute_names(elements)?;
        for (name, treatment) in elements.iter().flat_map(|e| attributes::accepted(e)) {
            if let Treatment::Refused(neutral) = treatment {
                self.refuse_unless(name, *neutral)?;
            }
        }
        Ok(())
    }

    /// Every attribute written on the element is accepted for one of `elements`, whatever its
    /// value (a default class: its values are checked where an element takes them).
    pub(super) fn check_attribute_names(&self, elements: &[&str]) -> Result<(), MjcfError> {
        let rows = || elements.iter().flat_map(|e| attributes::accepted(e));
        let parent = self.at.node.parent_element().map_or("", |p| p.tag_name().name());
        for attribute in self.at.node.attributes() {
            let name = attribute.name();
            let known = attributes::mujoco_knows(parent, self.tag(), name);
            // Every attribute, on an element of whatever tag the table's row set covers, must be
            // one MuJoCo knows for this tag: `<motor kp>` is an error there too.
            if known && rows().any(|(accepted, _)| *accepted == name || *accepted == "*") {
                continue;
            }
            return Err(if known {
                self.unsupported_attribute(name, format!("attribute `{name}`"))
            } else {
                self.invalid(format!("unknown attribute `{name}` on <{}>", self.tag()))
            });
        }
        Ok(())
    }

    /// The element's own value of `name`, else its default class's.
    pub(super) fn raw(&self, name: &str) -> Option<&str> {
        self.at.node.attribute(name).or_else(|| self.defaults.and_then(|d| d.get(name)).map(String::as_str))
    }

    /// True when `name` is given on the element or its defaults.
    pub(super) fn has(&self, name: &str) -> bool {
        self.raw(name).is_some()
    }

    /// The value of attribute `name`, renamed as the replicate copy it is read in renames it.
    pub(super) fn string(&self, name: &str) -> Option<String> {
        let value = self.raw(name)?;
        Some(self.rename.as_ref().and_then(|r| r.apply(name, value)).unwrap_or_else(|| value.to_string()))
    }

    /// All numbers of attribute `name`.
    pub(super) fn numbers(&self, name: &str) -> Result<Option<Vec<f64>>, MjcfError> {
        self.raw(name).map(|text| self.parse_numbers(name, text)).transpose()
    }

    /// The numbers of an attribute of [`PREFIX_WRITTEN`]: the element's own written over the
    /// first of its class's.
    pub(super) fn prefix_numbers(&self, name: &str) -> Result<Option<Vec<f64>>, MjcfError> {
        debug_assert!(PREFIX_WRITTEN.contains(&name), "`{name}` is read whole");
        let class = self.defaults.and_then(|d| d.get(name));
        match (self.at.node.attribute(name), class) {
            (Some(own), Some(class)) => self.parse_numbers(name, &write_prefix(class, own)).map(Some),
            _ => self.numbers(name),
        }
    }

    fn parse_numbers(&self, name: &str, text: &str) -> Result<Vec<f64>, MjcfError> {
        text.split_whitespace()
            .map(|w| {
                w.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| self.invalid(format!("attribute `{name}`: `{w}` is not a finite number")))
            })
            .collect()
    }

    /// Exactly `N` numbers.
    pub(super) fn array<const N: usize>(&self, name: &str) -> Result<Option<[f64; N]>, MjcfError> {
        match self.numbers(name)? {
            None => Ok(None),
            Some(v) => <[f64; N]>::try_from(v.as_slice())
                .map(Some)
                .map_err(|_| self.invalid(format!("attribute `{name}` needs {N} numbers, got {}", v.len()))),
        }
    }

    /// Between 1 and `N` numbers of an attribute of [`PREFIX_WRITTEN`], the rest filled from
    /// `fill`.
    pub(super) fn padded<const N: usize>(&self, name: &str, fill: [f64; N]) -> Result<[f64; N], MjcfError> {
        match self.prefix_numbers(name)? {
            None => Ok(fill),
            Some(v) if v.is_empty() || v.len() > N => {
                Err(self.invalid(format!("attribute `{name}` needs 1 to {N} numbers, got {}", v.len())))
            }
            Some(v) => {
                let mut out = fill;
                out[..v.len()].copy_from_slice(&v);
                Ok(out)
            }
        }
    }

    pub(super) fn number(&self, name: &str) -> Result<Option<f64>, MjcfError> {
        Ok(self.array::<1>(name)?.map(|[x]| x))
    }

    /// MuJoCo 4's polynomial coefficients (`stiffness`, `damping`): one to three numbers, the
    /// linear term and the higher ones (zero when not written).
    pub(super) fn polynomial(&self, name: &str) -> Result<(f64, [f64; 2]), MjcfError> {
        match self.numbers(name)?.as_deref() {
            None => Ok((0.0, [0.0; 2])),
            Some([linear]) => Ok((*linear, [0.0; 2])),
            Some([linear, square]) => Ok((*linear, [*square, 0.0])),
            Some([linear, square, cube]) => Ok((*linear, [*square, *cube])),
            Some(_) => Err(self.invalid(format!("attribute `{name}` takes one to three numbers"))),
        }
    }

    pub(super) fn number_or(&self, name: &str, default: f64) -> Result<f64, MjcfError> {
        Ok(self.number(name)?.unwrap_or(default))
    }

    pub(super) fn integer(&self, name: &str) -> Result<Option<i64>, MjcfError> {
        self.raw(name)
            .map(|t| {
                t.trim()
                    .parse::<i64>()
                    .map_err(|_| self.invalid(format!("attribute `{name}`: `{t}` is not an integer")))
            })
            .transpose()
    }

    /// One of `options`.
    pub(super) fn keyword(&self, name: &str, options: &[&'static str]) -> Result<Option<&'static str>, MjcfError> {
        let Some(text) = self.raw(name) else { return Ok(None) };
        let text = text.trim();
        options
            .iter()
            .find(|o| **o == text)
            .copied()
            .map(Some)
            .ok_or_else(|| self.invalid(format!("attribute `{name}`: `{text}` is not one of {}", options.join(", "))))
    }

    pub(super) fn boolean(&self, name: &str) -> Result<Option<bool>, MjcfError> {
        Ok(self.keyword(name, &["true", "false"])?.map(|k| k == "true"))
    }

    /// The range `range` when MuJoCo's `limited`-style attribute `limited` makes it act:
    /// `true`, `false`, or `auto` (under `autolimits`, limited when the range has lo < hi; a
    /// range of `0 0` is no range). A range that acts must have lo < hi when `ordered`.
    pub(super) fn limits(
        &self,
        limited: &str,
        range: &str,
        autolimits: bool,
        ordered: bool,
    ) -> Result<Option<[f64; 2]>, MjcfError> {
        let given = self.array::<2>(range)?;
        self.limits_of(limited, range, given, autolimits).and_then(|acts| match acts {
            Some([lo, hi]) if ordered && lo >= hi => Err(self.invalid(format!("`{range}` {lo} {hi} needs lo < hi"))),
            acts => Ok(acts),
        })
    }

    /// [`Self::limits`] of the range `given` (for `range`, as if written there), unchecked
    /// for order.
    pub(super) fn limits_of(
        &self,
        limited: &str,
        range: &str,
        given: Option<[f64; 2]>,
        autolimits: bool,
    ) -> Result<Option<[f64; 2]>, MjcfError> {
        let [lo, hi] = given.unwrap_or([0.0; 2]);
        let acts = match self.keyword(limited, &["true", "false", "auto"])? {
            Some("true") => true,
            Some("false") => false,
            _ if !autolimits && [lo, hi] != [0.0; 2] => {
                return Err(self.invalid(format!("`{range}` without `{limited}`, and compiler autolimits is false")));
            }
            _ => autolimits && lo < hi,
        };
        Ok(acts.then_some([lo, hi]))
    }

    /// Errors when an attribute phyz does not implement is set to anything but its neutral
    /// value.
    fn refuse_unless(&self, name: &str, neutral: Neutral) -> Result<(), MjcfError> {
        let Some(value) = self.raw(name) else { return Ok(()) };
        let neutral = match neutral {
            Neutral::Absent => false,
            Neutral::Words(words) => words.contains(&value.trim()),
            Neutral::Zero => self.numbers(name)?.is_some_and(|v| v.iter().all(|x| *x == 0.0)),
        };
        if neutral { Ok(()) } else { Err(self.unsupported_attribute(name, format!("attribute `{name}=\"{value}\"`"))) }
    }
}
