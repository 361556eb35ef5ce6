//! MuJoCo's default actuator: each default class keeps one actuator record (gain, bias and
//! dynamics, each a type and its numbers) that every actuator element in the class rewrites,
//! whatever its kind, and every actuator starts from its class's record.
//!
//! As MuJoCo 4.0.1 reads them (measured: `tests/actuator_records.rs`): a `<general>` writes
//! the numbers it is given over the record. A shortcut (`<position>`, `<muscle>`, …) writes a
//! whole new shape, made from its own attributes and, for those it is not given, from the
//! numbers of the nearest record that a `<general>` or the same shortcut shaped last: its
//! class's, else its parent class's, and so on (a `<position>` under a class whose own
//! `<velocity>` came after its `<position>` starts from the parent's record, or MuJoCo's plain
//! one).

use std::f64::consts::FRAC_PI_4;

use super::element::Element;
use super::error::MjcfError;
use super::muscle;
use crate::model::{Dynamics, Term};

/// MuJoCo's gain types that phyz simulates (`gaintype`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum GainKind {
    Fixed,
    Affine,
    Muscle,
}

/// MuJoCo's bias types that phyz simulates (`biastype`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum BiasKind {
    None,
    Affine,
    Muscle,
}

/// MuJoCo's activation dynamics types that phyz simulates (`dyntype`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum DynKind {
    None,
    Integrator,
    Filter,
    FilterExact,
    Muscle,
}

/// Numbers a record holds per term, as MuJoCo's `gainprm`, `biasprm` and `dynprm`.
const PARAMETERS: usize = 10;

/// An actuator's shape: its gain, bias and dynamics, each a type and its numbers.
#[derive(Clone, Debug)]
pub(super) struct Shape {
    pub(super) gain_kind: GainKind,
    pub(super) gain: [f64; PARAMETERS],
    pub(super) bias_kind: BiasKind,
    pub(super) bias: [f64; PARAMETERS],
    pub(super) dyn_kind: DynKind,
    pub(super) dynamics: [f64; PARAMETERS],
}

impl Default for Shape {
    /// MuJoCo's plain shape: a unit fixed gain, no bias, no dynamics (a unit first dynamics
    /// number).
    fn default() -> Self {
        Shape {
            gain_kind: GainKind::Fixed,
            gain: unit(1.0),
            bias_kind: BiasKind::None,
            bias: [0.0; PARAMETERS],
            dyn_kind: DynKind::None,
            dynamics: unit(1.0),
        }
    }
}

fn unit(x: f64) -> [f64; PARAMETERS] {
    let mut p = [0.0; PARAMETERS];
    p[0] = x;
    p
}

/// One default actuator record.
#[derive(Clone, Debug, Default)]
pub(super) struct Record {
    pub(super) shape: Shape,
    /// The shortcut element that shaped the record last (none: plain, or a `<general>`).
    shortcut: Option<&'static str>,
    /// `inheritrange`: a servo's range is its target's, scaled by this, when positive.
    pub(super) inherit_range: f64,
    /// A damper limits its control whatever `ctrllimited` said before it (until an element
    /// writes `ctrllimited` again).
    pub(super) ctrl_limited: bool,
    /// `ctrlrange` and `actrange` as written (zero: not given); a servo's own `inheritrange`
    /// clears the one it replaces.
    pub(super) ctrl_range: [f64; 2],
    pub(super) act_range: [f64; 2],
}

/// MuJoCo's muscle defaults: time constants (activation, deactivation), then `range` (two),
/// `force`, `scale`, `lmin`, `lmax`, `vmax`, `fpmax`, `fvmax`.
const MUSCLE_TIMES: [f64; 2] = [0.01, 0.04];
const MUSCLE_NUMBERS: [f64; 9] = [0.75, 1.05, -1.0, 200.0, 0.5, 1.6, 1.5, 1.3, 1.2];
const MUSCLE_NAMES: [&str; 7] = ["force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax"];

/// The shortcut elements, by tag.
const SHORTCUTS: [&str; 8] =
    ["motor", "position", "intvelocity", "velocity", "damper", "cylinder", "muscle", "adhesion"];

impl Record {
    /// The record after actuator element `el` (in a default class, or in `<actuator>`), this
    /// record being its class's and `ancestors` the final records of the class's parents,
    /// nearest first.
    pub(super) fn apply(&mut self, el: &Element<'_, '_>, ancestors: &[Record]) -> Result<(), MjcfError> {
        let own = Element::new(el.at, None);
        if own.has("ctrllimited") {
            self.ctrl_limited = false;
        }
        self.ctrl_range = own.array::<2>("ctrlrange")?.unwrap_or(self.ctrl_range);
        self.act_range = own.array::<2>("actrange")?.unwrap_or(self.act_range);
        if el.tag() == "general" {
            self.shortcut = None;
            return self.general(&own);
        }
        let Some(&tag) = SHORTCUTS.iter().find(|&&t| t == el.tag()) else {
            return Err(el.unsupported(format!("<{}> actuators", el.tag())));
        };
        let from = self.source(tag, ancestors);
        self.shape = match tag {
            "motor" => Shape::default(),
            "position" | "intvelocity" => self.servo(&own, &from)?,
            "velocity" => {
                let kv = own.number_or("kv", from.shape.gain[0])?;
                Shape {
                    bias_kind: BiasKind::Affine,
                    bias: [0.0, 0.0, -kv, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                    ..gain(kv)
                }
            }
            "damper" => self.damper(&own, &from.shape)?,
            "cylinder" => cylinder(&own, &from.shape)?,
            "muscle" => muscle_shape(&own, &from.shape)?,
            _ => self.adhesion(&own, &from.shape)?,
        };
        self.shortcut = Some(tag);
        Ok(())
    }

    /// The record shortcut `tag` reads what it is not given from: the nearest of this record
    /// and `ancestors` that `tag` itself shaped last, or a `<general>` (or nothing) with a gain
    /// of the type `tag` makes; else MuJoCo's plain record.
    fn source(&self, tag: &str, ancestors: &[Record]) -> Record {
        let gain_kind = match tag {
            "damper" => GainKind::Affine,
            "muscle" => GainKind::Muscle,
            _ => GainKind::Fixed,
        };
        let readable = |r: &&Record| match r.shortcut {
            Some(last) => last == tag,
            None => r.shape.gain_kind == gain_kind,
        };
        std::iter::once(self).chain(ancestors).find(readable).cloned().unwrap_or_default()
    }

    /// `<general>`: its types and numbers as written, each list over the record's first ones.
    fn general(&mut self, own: &Element<'_, '_>) -> Result<(), MjcfError> {
        let unsupported = |name: &str, value: &str| own.unsupported_attribute(name, format!("{name}=\"{value}\""));
        let shape = &mut self.shape;
        if let Some(kind) = own.keyword("gaintype", &["fixed", "affine", "muscle", "user"])? {
            shape.gain_kind = match kind {
                "fixed" => GainKind::Fixed,
                "affine" => GainKind::Affine,
                "muscle" => GainKind::Muscle,
                other => return Err(unsupported("gaintype", other)),
            };
        }
        if let Some(kind) = own.keyword("biastype", &["none", "affine", "muscle", "user"])? {
            shape.bias_kind = match kind {
                "none" => BiasKind::None,
                "affine" => BiasKind::Affine,
                "muscle" => BiasKind::Muscle,
                other => return Err(unsupported("biastype", other)),
            };
        }
        let kinds = ["none", "integrator", "filter", "filterexact", "muscle", "user"];
        if let Some(kind) = own.keyword("dyntype", &kinds)? {
            shape.dyn_kind = match kind {
                "none" => DynKind::None,
                "integrator" => DynKind::Integrator,
                "filter" => DynKind::Filter,
                "filterexact" => DynKind::FilterExact,
                "muscle" => DynKind::Muscle,
                other => return Err(unsupported("dyntype", other)),
            };
        }
        shape.gain = own.padded("gainprm", shape.gain)?;
        shape.bias = own.padded("biasprm", shape.bias)?;
        shape.dynamics = own.padded("dynprm", shape.dynamics)?;
        self.inherit_range = own.number_or("inheritrange", self.inherit_range)?;
        Ok(())
    }

    /// `<position>` and `<intvelocity>`: gain `kp`, bias `-kp` on the length and `-kv` (or a
    /// damping ratio, kept positive for the compiler's constants) on the velocity; a position
    /// servo's `timeconst` filters its control exactly. As MuJoCo 4.0.1, a range written on the
    /// element (`ctrlrange`, an integrator's `actrange`) wins over a class's `inheritrange`,
    /// and beside its own is an error.
    fn servo(&mut self, own: &Element<'_, '_>, from: &Record) -> Result<Shape, MjcfError> {
        let integrator = own.tag() == "intvelocity";
        let (from, inherited) = (&from.shape, from.inherit_range);
        let kp = own.number_or("kp", from.gain[0])?;
        let velocity = match (non_negative(own, "kv")?, non_negative(own, "dampratio")?) {
            (Some(_), Some(_)) => return Err(own.invalid("kv and dampratio cannot both be defined")),
            (Some(kv), None) => -kv,
            (None, Some(ratio)) => ratio,
            (None, None) => from.bias[2],
        };
        let inherited_filter = (from.dyn_kind == DynKind::FilterExact).then_some(from.dynamics[0]);
        let filter = non_negative(own, "timeconst")?.or(inherited_filter).filter(|tau| *tau > 0.0);
        let name = if integrator { "actrange" } else { "ctrlrange" };
        let range = if integrator { &mut self.act_range } else { &mut self.ctrl_range };
        let both = || own.invalid(format!("{name} and inheritrange cannot both be defined"));
        self.inherit_range = match (own.number("inheritrange")?, own.has(name)) {
            (Some(factor), true) if factor > 0.0 => return Err(both()),
            (_, true) => 0.0,
            (Some(factor), false) => {
                if factor > 0.0 {
                    *range = [0.0; 2];
                }
                factor
            }
            (None, false) if inherited > 0.0 && *range != [0.0; 2] => return Err(both()),
            (None, false) => inherited,
        };
        let (dyn_kind, dynamics) = match filter {
            _ if integrator => (DynKind::Integrator, unit(1.0)),
            Some(tau) => (DynKind::FilterExact, unit(tau)),
            None => (DynKind::None, unit(1.0)),
        };
        let bias = [0.0, -kp, velocity, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        Ok(Shape { bias_kind: BiasKind::Affine, bias, dyn_kind, dynamics, ..gain(kp) })
    }

    /// `<damper>`: force `-kv · velocity · control`, the control limited to a non-negative range.
    fn damper(&mut self, own: &Element<'_, '_>, from: &Shape) -> Result<Shape, MjcfError> {
        let kv = own.number_or("kv", -from.gain[2])?;
        self.ctrl_limited = true;
        if kv < 0.0 {
            return Err(own.invalid("damping coefficient cannot be negative"));
        }
        if self.ctrl_range.iter().any(|x| *x < 0.0) {
            return Err(own.invalid("damper control range cannot be negative"));
        }
        Ok(Shape {
            gain_kind: GainKind::Affine,
            gain: [0.0, 0.0, -kv, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            ..Shape::default()
        })
    }

    /// `<adhesion>` (which phyz refuses on an actuator, not in a class): a fixed gain on a
    /// non-negative control.
    fn adhesion(&mut self, own: &Element<'_, '_>, from: &Shape) -> Result<Shape, MjcfError> {
        let g = own.number_or("gain", from.gain[0])?;
        self.ctrl_limited = true;
        if g < 0.0 {
            return Err(own.invalid("adhesion gain cannot be negative"));
        }
        if self.ctrl_range.iter().any(|x| *x < 0.0) {
            return Err(own.invalid("adhesion control range cannot be negative"));
        }
        Ok(gain(g))
    }

    /// Whether the record is a servo in MuJoCo's sense (fixed gain `kp`, affine bias `-kp` on
    /// the length): what `inheritrange` and the setpoint's turn apply to.
    pub(super) fn servo_shaped(&self) -> bool {
        let s = &self.shape;
        s.gain_kind == GainKind::Fixed && s.bias_kind == BiasKind::Affine && s.gain[0] == -s.bias[1]
    }

    /// The gain and bias terms, noting in `scales` the scale of a muscle term whose peak force
    /// the compiler's constants resolve. A fixed gain keeps its first number; an affine term its
    /// first three.
    pub(super) fn terms(
        &self,
        el: &Element<'_, '_>,
        scales: &mut [Option<f64>; 2],
    ) -> Result<(Term<f64>, Term<f64>), MjcfError> {
        let three = |p: &[f64; PARAMETERS]| [p[0], p[1], p[2]];
        let muscle = |p: &[f64; PARAMETERS], scale: &mut Option<f64>| -> Result<Term<f64>, MjcfError> {
            let (term, automatic) = muscle::term(el, p)?;
            *scale = automatic;
            Ok(Term::Muscle(term))
        };
        let [gain_scale, bias_scale] = scales;
        let gain = match self.shape.gain_kind {
            GainKind::Fixed => Term::Affine([self.shape.gain[0], 0.0, 0.0]),
            GainKind::Affine => Term::Affine(three(&self.shape.gain)),
            GainKind::Muscle => muscle(&self.shape.gain, gain_scale)?,
        };
        let bias = match self.shape.bias_kind {
            BiasKind::None => Term::Affine([0.0; 3]),
            BiasKind::Affine => Term::Affine(three(&self.shape.bias)),
            BiasKind::Muscle => muscle(&self.shape.bias, bias_scale)?,
        };
        Ok((gain, bias))
    }

    /// The activation dynamics.
    pub(super) fn dynamics(&self, el: &Element<'_, '_>) -> Result<Dynamics<f64>, MjcfError> {
        let p = &self.shape.dynamics;
        let filter = |exact: bool| {
            if p[0] < 0.0 {
                return Err(el.invalid("a time constant cannot be negative"));
            }
            Ok(Dynamics::Filter { time_constant: p[0], exact })
        };
        match self.shape.dyn_kind {
            DynKind::None => Ok(Dynamics::None),
            DynKind::Integrator => Ok(Dynamics::Integrator),
            DynKind::Filter => filter(false),
            DynKind::FilterExact => filter(true),
            DynKind::Muscle => Ok(Dynamics::Muscle { activation: p[0], deactivation: p[1], smoothing: p[2] }),
        }
    }
}

/// The plain shape with a fixed gain `g`.
fn gain(g: f64) -> Shape {
    Shape { gain: unit(g), ..Shape::default() }
}

/// An attribute that cannot be negative, when written.
fn non_negative(own: &Element<'_, '_>, name: &str) -> Result<Option<f64>, MjcfError> {
    match own.number(name)? {
        Some(x) if x < 0.0 => Err(own.invalid(format!("{name} cannot be negative"))),
        x => Ok(x),
    }
}

/// `<cylinder>`: a filtered pressure on an `area` (or a `diameter`'s), with an affine bias.
fn cylinder(own: &Element<'_, '_>, from: &Shape) -> Result<Shape, MjcfError> {
    let tau = own.number_or("timeconst", from.dynamics[0])?;
    let mut bias = [0.0; PARAMETERS];
    bias[..3].copy_from_slice(&own.array::<3>("bias")?.unwrap_or([from.bias[0], from.bias[1], from.bias[2]]));
    let area = match own.number("diameter")? {
        Some(d) if d >= 0.0 => FRAC_PI_4 * d * d,
        _ => own.number_or("area", from.gain[0])?,
    };
    Ok(Shape { bias_kind: BiasKind::Affine, bias, dyn_kind: DynKind::Filter, dynamics: unit(tau), ..gain(area) })
}

/// `<muscle>`: MuJoCo's muscle numbers (a muscle-shaped record's own, else the defaults), each
/// replaced by the element's where it gives a non-negative one; the bias takes the gain's.
fn muscle_shape(own: &Element<'_, '_>, from: &Shape) -> Result<Shape, MjcfError> {
    let (mut gain, mut dynamics) = (from.gain, from.dynamics);
    if from.gain_kind != GainKind::Muscle {
        (gain, dynamics) = ([0.0; PARAMETERS], [0.0; PARAMETERS]);
        gain[..9].copy_from_slice(&MUSCLE_NUMBERS);
        dynamics[..2].copy_from_slice(&MUSCLE_TIMES);
    }
    let given = |x: f64, slot: &mut f64| {
        if x >= 0.0 {
            *slot = x;
        }
    };
    let times = own.array::<2>("timeconst")?.unwrap_or([-1.0; 2]);
    given(times[0], &mut dynamics[0]);
    given(times[1], &mut dynamics[1]);
    let range = own.array::<2>("range")?.unwrap_or([-1.0; 2]);
    given(range[0], &mut gain[0]);
    given(range[1], &mut gain[1]);
    for (k, name) in MUSCLE_NAMES.iter().enumerate() {
        given(own.number_or(name, -1.0)?, &mut gain[k + 2]);
    }
    dynamics[2] = own.number_or("tausmooth", dynamics[2])?;
    if dynamics[2] < 0.0 {
        return Err(own.invalid("muscle tausmooth cannot be negative"));
    }
    let mut bias = [0.0; PARAMETERS];
    bias[..9].copy_from_slice(&gain[..9]);
    Ok(Shape {
        gain_kind: GainKind::Muscle,
        gain,
        bias_kind: BiasKind::Muscle,
        bias,
        dyn_kind: DynKind::Muscle,
        dynamics,
    })
}
