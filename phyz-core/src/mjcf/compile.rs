//! From parsed MJCF elements to a model, following MuJoCo's compiler.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use nalgebra::{DVector, Matrix3, Vector3};

use super::actuator_record::Record;
use super::align;
use super::constants::{self, Deferred, SpringDamper};
use super::defaults::{Defaults, MAIN};
use super::element::Element;
use super::error::{Location, MjcfError, MjcfErrorKind};
use super::frame::{AngleSettings, Placement, orientation, z_to};
use super::length_range;
use super::mass::{Part, combine, geom_mass};
use super::replicate::{self, Rename, Replicate};
use super::source::{Located, Parsed};
use crate::math::Quat;
use crate::model::hfield;
use crate::model::mesh::{ConvexHull, MeshError, MeshInertia, MeshOptions};
use crate::model::{
    ActuatorSpec, BodySpec, Cone, ContactPairSpec, CoupledNames, DEFAULT_RGBA, DEFAULT_SOLIMP, DEFAULT_SOLREF,
    Dynamics, EqualitySpec, Frame, Geom, HeightField, Integrator, JointKind, JointSpec, Keyframe, Model, ModelBuilder,
    ModelError, PathSpec, PointSpec, Sensor, SensorKind, Shape, Site, SiteZone, Target, TendonSpec, Term,
    is_fixed_servo,
};

/// An element inside a body (or the world), with the class its defaults come from and where
/// the `<frame>`s around it put it.
struct Placed<'a> {
    at: Located<'a>,
    childclass: String,
    placement: Placement,
    /// The renaming of the replicate copy it is in, if any.
    rename: Option<Rc<Rename>>,
}

/// What a body's elements give it besides joints, geoms and sites: its `<inertial>`, its geoms'
/// mass parts, and its child bodies.
#[derive(Default)]
struct BodyParts<'a> {
    inertial: Option<Part>,
    /// The axes MuJoCo gives an `<inertial>`: its own with principal moments, its Jacobi
    /// iteration's with a full inertia.
    inertial_axes: Option<Quat<f64>>,
    geoms: Vec<Part>,
    bodies: Vec<Placed<'a>>,
    /// A `<freejoint align>`: `None` for `auto` (the compiler's `alignfree` decides).
    align: Option<bool>,
}

/// `<compiler inertiafromgeom>`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum InertiaFromGeom {
    Always,
    Never,
    Auto,
}

struct Settings {
    angles: AngleSettings,
    inertia_from_geom: InertiaFromGeom,
    total_mass: Option<f64>,
    autolimits: bool,
    /// Where mesh files are looked up, relative to the model file (`meshdir`, else `assetdir`).
    mesh_dir: Option<String>,
    /// `strippath`: mesh files are named by their file name alone.
    strip_path: bool,
    /// `inertiagrouprange`: the geom groups whose geoms give their bodies mass.
    inertia_groups: [i64; 2],
    /// `discardvisual`: visual geoms (no contact type or affinity, named by no other element)
    /// are left out once they have given their bodies mass, and meshes only they use need not
    /// be readable.
    discard_visual: bool,
    /// `alignfree`: free bodies without children take their inertial frames as their frames
    /// (unless their `<freejoint align>` says otherwise).
    align_free: bool,
    /// `boundmass`, `boundinertia`, `balanceinertia`: floors on every body's mass and principal
    /// moments, and whether moments that break the triangle inequality become their mean.
    bounds: InertiaBounds,
    /// `<lengthrange>`: which actuators' length ranges the compiler finds, and how.
    length_range: length_range::Options,
}

/// MuJoCo's compiler floors on a body's mass and principal moments, and its `balanceinertia`.
#[derive(Clone, Copy, Default)]
struct InertiaBounds {
    mass: f64,
    inertia: f64,
    balance: bool,
}

impl InertiaBounds {
    /// A body's mass and inertia tensor (about its centre of mass) bounded as MuJoCo's compiler
    /// bounds them: the mass at least `mass`, each principal moment at least `inertia`, and,
    /// with `balance`, moments that break the triangle inequality replaced by their mean. The
    /// tensor is rebuilt only where a bound changes it.
    fn apply(&self, mass: f64, inertia: Matrix3<f64>) -> (f64, Matrix3<f64>) {
        let mass = mass.max(self.mass);
        let (axes, moments) = crate::math::principal_axes(&inertia);
        let mut bounded = moments.map(|m| m.max(self.inertia));
        let [a, b, c] = [bounded.x, bounded.y, bounded.z];
        if self.balance && (a + b < c || a + c < b || b + c < a) {
            bounded = Vector3::repeat((a + b + c) / 3.0);
        }
        if bounded == moments {
            return (mass, inertia);
        }
        let r = axes.to_rotation_matrix();
        (mass, r * Matrix3::from_diagonal(&bounded) * r.transpose())
    }
}

/// Top-level elements that only matter for rendering or bookkeeping.
const SKIPPED: &[&str] = &["visual", "statistic", "custom"];

/// Assets only rendering uses.
const RENDERING_ASSETS: &[&str] = &["texture", "skin"];

struct Compiler<'a> {
    parsed: &'a Parsed<'a>,
    settings: Settings,
    defaults: Defaults,
    builder: ModelBuilder,
    /// Bodies in MuJoCo's order (depth first), with their parent's index.
    bodies: Vec<(usize, BodySpec)>,
    body_index: HashMap<String, usize>,
    /// Where each named body, joint, tendon and actuator is written, to place model errors.
    places: HashMap<(&'static str, String), Location>,
    /// Keyframes count requested by `<size nkey>`.
    nkey: usize,
    /// Mesh assets by name; one that cannot be read is an error where a geom needs it (at
    /// once, unless `discardvisual` may leave it unused).
    meshes: HashMap<String, Result<Arc<ConvexHull>, MjcfError>>,
    /// `<hfield>` assets by name.
    hfields: HashMap<String, Arc<HeightField>>,
    /// `<material>` colours by name (what a viewer draws a geom naming one in).
    materials: HashMap<String, [f32; 4]>,
    /// What the compiler's constants at the reference configuration resolve.
    deferred: Deferred,
    /// Tendons read so far.
    tendon_count: usize,
    /// Actuators added so far.
    actuator_count: usize,
    /// Joints' and tendons' ranges as MuJoCo keeps them, and whether the joint is a hinge or a
    /// slide (tendons: true), for actuators' `inheritrange`.
    target_ranges: HashMap<(&'static str, String), ([f64; 2], bool)>,
    /// The names other elements give geoms by (pairs, tendon wraps, sensors): such geoms are
    /// never discarded as visual.
    referenced_geoms: HashSet<String>,
    /// The `<replicate>` elements read, in document order.
    replicates: Vec<Replicate>,
}

pub(super) fn compile<'a>(parsed: &'a Parsed<'a>) -> Result<Model<f64>, MjcfError> {
    let root = parsed.root();
    if !root.node.has_tag_name("mujoco") {
        return Err(Element::new(root, None).invalid("the root element must be <mujoco>"));
    }
    Element::new(root, None).check_attributes("mujoco")?;
    let top = parsed.children(root);
    let of = |tag: &'static str| top.iter().copied().filter(move |e| e.node.has_tag_name(tag));

    let mut settings = Settings {
        angles: AngleSettings { degrees: true, euler_seq: *b"xyz" },
        inertia_from_geom: InertiaFromGeom::Auto,
        total_mass: None,
        autolimits: true,
        mesh_dir: None,
        strip_path: false,
        inertia_groups: [0, 5],
        discard_visual: false,
        align_free: false,
        bounds: InertiaBounds::default(),
        length_range: length_range::Options::default(),
    };
    for at in of("compiler") {
        read_compiler(&Element::new(at, None), &mut settings)?;
        for child in parsed.children(at) {
            let el = Element::new(child, None);
            match el.tag() {
                "lengthrange" => settings.length_range = length_range::Options::read(&el)?,
                tag => return Err(el.unsupported(format!("<{tag}> in <compiler>"))),
            }
        }
    }
    let defaults = Defaults::read(parsed, &of("default").collect::<Vec<_>>())?;
    let mut c = Compiler {
        parsed,
        settings,
        defaults,
        builder: ModelBuilder::new(),
        bodies: Vec::new(),
        body_index: HashMap::from([("world".to_string(), 0)]),
        places: HashMap::new(),
        nkey: 0,
        meshes: HashMap::new(),
        hfields: HashMap::new(),
        materials: HashMap::new(),
        target_ranges: HashMap::new(),
        deferred: Deferred::default(),
        tendon_count: 0,
        actuator_count: 0,
        referenced_geoms: parsed
            .docs
            .iter()
            .flat_map(|(_, doc)| doc.descendants())
            .flat_map(|node| node.attributes())
            .filter(|a| matches!(a.name(), "geom" | "geom1" | "geom2" | "objname" | "refname"))
            .map(|a| a.value().to_string())
            .collect(),
        replicates: Vec::new(),
    };
    for at in of("asset") {
        c.assets(at)?;
    }
    for &at in &top {
        let el = Element::new(at, None);
        match el.tag() {
            "compiler" | "default" => {}
            // Containers: their children are read below.
            "tendon" | "actuator" | "keyframe" | "contact" | "asset" | "sensor" => {
                el.check_no_attributes()?;
            }
            "option" => c.option(&el)?,
            "size" => {
                el.check_attributes("size")?;
                c.nkey = el.integer("nkey")?.unwrap_or(0).max(0) as usize;
            }
            "worldbody" => c.worldbody(at)?,
            "deformable" if !parsed.children(at).is_empty() => {
                return Err(el.unsupported("<deformable> constraints"));
            }
            "equality" | "deformable" => {}
            tag if SKIPPED.contains(&tag) => {}
            tag => return Err(el.unsupported(format!("element <{tag}>"))),
        }
    }
    c.finish_bodies()?;
    let section = |tag: &'static str| of(tag).flat_map(|at| parsed.children(at)).collect::<Vec<_>>();
    for (child, rename) in replicate::section(&section("tendon"), "tendon", &mut c.replicates)? {
        c.tendon(child, rename)?;
    }
    for (child, rename) in replicate::section(&section("actuator"), "actuator", &mut c.replicates)? {
        c.actuator_element(child, rename)?;
    }
    for at in of("equality") {
        c.equalities(at)?;
    }
    for at in of("contact") {
        c.contact(at)?;
    }
    let located_error = |e: ModelError| MjcfError {
        location: subject(&e)
            .and_then(|key| c.places.get(&key).cloned())
            .unwrap_or_else(|| Element::new(root, None).location()),
        kind: MjcfErrorKind::Model(e),
    };
    let mut model = c.builder.build().map_err(located_error)?;
    constants::resolve(&mut model, &c.deferred, &c.settings.length_range).map_err(|(actuator, e)| {
        let place = actuator.and_then(|a| c.places.get(&("actuator", model.actuators()[a].name.clone())));
        MjcfError {
            location: place.cloned().unwrap_or_else(|| Element::new(root, None).location()),
            kind: MjcfErrorKind::Invalid(e),
        }
    })?;
    // What the compiler's constants changed (servo damping, joints' springs, tendons' rest
    // lengths, actuators' ranges) is none of what the model's constants read: the builder's
    // stand.
    for at in of("keyframe") {
        for key in parsed.children(at) {
            let keyframe = read_key(&Element::new(key, None), &model)?;
            model.add_keyframe(keyframe).map_err(|e| MjcfError {
                location: Element::new(key, None).location(),
                kind: MjcfErrorKind::Model(e),
            })?;
        }
    }
    for (child, rename) in replicate::section(&section("sensor"), "sensor", &mut c.replicates)? {
        let el = Element::new(child, None).renamed(rename);
        let sensor = match read_sensor(&el, &model) {
            Ok(sensor) => sensor,
            // A sensor changes no dynamics: the model loads, and its outputs are refused.
            Err(e) if matches!(e.kind, MjcfErrorKind::Unsupported(_)) => {
                model.add_unsupported_sensor(el.string("name").unwrap_or_default(), e.to_string());
                continue;
            }
            Err(e) => return Err(e),
        };
        model.add_sensor(sensor).map_err(|e| MjcfError { location: el.location(), kind: MjcfErrorKind::Model(e) })?;
    }
    while model.keyframes().len() < c.nkey {
        model.add_keyframe(rest_key(&model)).map_err(located_error)?;
    }
    Ok(model)
}

/// The element a model error is about, as a key of `Compiler::places`.
fn subject(e: &ModelError) -> Option<(&'static str, String)> {
    match e {
        ModelError::InvalidMass { body, .. }
        | ModelError::InvalidMocap { body }
        | ModelError::InvalidInertia { body, .. }
        | ModelError::InvalidParent { body, .. }
        | ModelError::InvalidGeom { body, .. } => Some(("body", body.clone())),
        ModelError::InvalidJoint { joint, .. } => Some(("joint", joint.clone())),
        ModelError::InvalidTendon { tendon, .. } => Some(("tendon", tendon.clone())),
        ModelError::InvalidActuator { actuator, .. } => Some(("actuator", actuator.clone())),
        ModelError::InvalidEquality { equality, .. } => Some(("equality", equality.clone())),
        ModelError::InvalidPair { pair, .. } => Some(("pair", pair.clone())),
        _ => None,
    }
}

fn read_compiler(el: &Element<'_, '_>, s: &mut Settings) -> Result<(), MjcfError> {
    el.check_attributes("compiler")?;
    if let Some(dir) = el.string("meshdir").or_else(|| el.string("assetdir")) {
        s.mesh_dir = Some(dir);
    }
    if let Some(angle) = el.keyword("angle", &["degree", "radian"])? {
        s.angles.degrees = angle == "degree";
    }
    if el.keyword("coordinate", &["local", "global"])? == Some("global") {
        return Err(el.unsupported_attribute("coordinate", "coordinate=\"global\" (removed from MuJoCo too)"));
    }
    if let Some(mode) = el.keyword("inertiafromgeom", &["true", "false", "auto"])? {
        s.inertia_from_geom = match mode {
            "true" => InertiaFromGeom::Always,
            "false" => InertiaFromGeom::Never,
            _ => InertiaFromGeom::Auto,
        };
    }
    if let Some(seq) = el.string("eulerseq") {
        let bytes = seq.as_bytes();
        if bytes.len() != 3 || !bytes.iter().all(|b| b"xyzXYZ".contains(b)) {
            return Err(el.invalid(format!("eulerseq `{seq}` must be three of xyzXYZ")));
        }
        s.angles.euler_seq = [bytes[0], bytes[1], bytes[2]];
    }
    if let Some(total) = el.number("settotalmass")?
        && total > 0.0
    {
        s.total_mass = Some(total);
    }
    if let Some(auto) = el.boolean("autolimits")? {
        s.autolimits = auto;
    }
    s.strip_path = el.boolean("strippath")?.unwrap_or(s.strip_path);
    s.discard_visual = el.boolean("discardvisual")?.unwrap_or(s.discard_visual);
    s.align_free = el.boolean("alignfree")?.unwrap_or(s.align_free);
    s.bounds.mass = el.number("boundmass")?.unwrap_or(s.bounds.mass);
    s.bounds.inertia = el.number("boundinertia")?.unwrap_or(s.bounds.inertia);
    s.bounds.balance = el.boolean("balanceinertia")?.unwrap_or(s.bounds.balance);
    if let Some(numbers) = el.array::<2>("inertiagrouprange")? {
        let [lo, hi] = numbers.map(|x| x as i64);
        if numbers != [lo as f64, hi as f64] {
            return Err(el.invalid("inertiagrouprange needs two integers"));
        }
        s.inertia_groups = [lo, hi];
    }
    Ok(())
}

impl<'a> Compiler<'a> {
    fn option(&mut self, el: &Element<'a, '_>) -> Result<(), MjcfError> {
        el.check_attributes("option")?;
        let b = &mut self.builder;
        b.timestep = el.number_or("timestep", b.timestep)?;
        if let Some(g) = el.array::<3>("gravity")? {
            b.gravity = Vector3::from(g);
        }
        match el.keyword("integrator", &["Euler", "RK4", "implicit", "implicitfast", "discrete"])? {
            Some("RK4") => b.integrator = Integrator::Rk4,
            Some("Euler") | None => b.integrator = Integrator::Euler,
            Some("implicit") => b.integrator = Integrator::Implicit,
            Some("implicitfast") => b.integrator = Integrator::ImplicitFast,
            Some(other) => return Err(el.unsupported_attribute("integrator", format!("integrator=\"{other}\""))),
        }
        match el.keyword("cone", &["pyramidal", "elliptic"])? {
            Some("elliptic") => b.contact.cone = Cone::Elliptic,
            _ => b.contact.cone = Cone::Pyramidal,
        }
        b.contact.impratio = el.number_or("impratio", b.contact.impratio)?;
        let noslip = &mut b.contact.noslip;
        if let Some(n) = el.integer("noslip_iterations")? {
            noslip.iterations = usize::try_from(n)
                .map_err(|_| el.invalid(format!("attribute `noslip_iterations`: {n} is negative")))?;
        }
        noslip.tolerance = el.number_or("noslip_tolerance", noslip.tolerance)?;
        let ccd = &mut b.contact.ccd;
        ccd.tolerance = el.number_or("ccd_tolerance", ccd.tolerance)?;
        if let Some(n) = el.integer("ccd_iterations")? {
            // MuJoCo's field is a 32-bit integer.
            let valid = i32::try_from(n).ok().and_then(|n| usize::try_from(n).ok());
            ccd.iterations = valid
                .ok_or_else(|| el.invalid(format!("attribute `ccd_iterations`: {n} is not a count MuJoCo takes")))?;
        }
        b.medium.density = el.number_or("density", 0.0)?;
        b.medium.viscosity = el.number_or("viscosity", 0.0)?;
        if let Some(w) = el.array::<3>("wind")? {
            b.medium.wind = Vector3::from(w);
        }
        for at in self.parsed.children(el.at) {
            let flag = Element::new(at, None);
            if flag.tag() != "flag" {
                return Err(flag.invalid(format!("unexpected <{}> in <option>", flag.tag())));
            }
            flag.check_attributes("flag")?;
            let read = |name: &str| flag.keyword(name, &["enable", "disable"]).map(|v| v.map(|v| v == "enable"));
            let e = &mut self.builder.enabled;
            for (name, switch) in [
                ("constraint", &mut e.constraint),
                ("limit", &mut e.limit),
                ("frictionloss", &mut e.frictionloss),
                ("equality", &mut e.equality),
                ("contact", &mut e.contact),
                ("gravity", &mut e.gravity),
                ("clampctrl", &mut e.clamp_ctrl),
                ("actuation", &mut e.actuation),
                ("eulerdamp", &mut e.euler_damp),
                ("spring", &mut e.spring),
                ("damper", &mut e.damper),
                ("filterparent", &mut e.filter_parent),
            ] {
                if let Some(on) = read(name)? {
                    *switch = on;
                }
            }
            if let Some(on) = read("island")? {
                self.builder.contact.noslip.islands = on;
            }
            // As MuJoCo 4: fluid forces are off only when springs and dampers both are.
            e.fluid = e.spring || e.damper;
            for (name, _) in super::attributes::accepted("flag") {
                read(name)?;
            }
        }
        Ok(())
    }

    /// `<equality>`: joint and tendon couplings, connects and welds; the other kinds are
    /// refused by name.
    fn equalities(&mut self, at: Located<'a>) -> Result<(), MjcfError> {
        Element::new(at, None).check_no_attributes()?;
        for (k, child) in self.parsed.children(at).into_iter().enumerate() {
            let el = self.defaults.element_in(child, "equality")?;
            let own = match el.tag() {
                "joint" => "equality/joint",
                "tendon" => "equality/tendon",
                "connect" => "equality/connect",
                "weld" => "equality/weld",
                "flex" | "flexvert" | "flexstrain" | "distance" => {
                    return Err(el.unsupported(format!("<{}> equality constraints", el.tag())));
                }
                other => return Err(el.invalid(format!("unexpected <{other}> in <equality>"))),
            };
            el.check_attributes_of(&["equality", own])?;
            let name = el.string("name").unwrap_or_else(|| format!("equality {k}"));
            self.places.insert(("equality", name.clone()), el.location());
            let coupled = equality_names(&el)?;
            self.builder.add_equality(EqualitySpec {
                name,
                coupled,
                polycoef: el.padded("polycoef", [0.0, 1.0, 0.0, 0.0, 0.0])?,
                torquescale: el.number_or("torquescale", 1.0)?,
                solref: el.padded("solref", DEFAULT_SOLREF)?,
                solimp: el.padded("solimp", DEFAULT_SOLIMP)?,
                active: el.boolean("active")?.unwrap_or(true),
            });
        }
        Ok(())
    }

    fn worldbody(&mut self, at: Located<'a>) -> Result<(), MjcfError> {
        Element::new(at, None).check_no_attributes()?;
        for placed in self.contents(at, MAIN, Placement::identity(), None)? {
            let Placed { at: child, ref childclass, placement, .. } = placed;
            let el = self.defaults.element(child, childclass)?.renamed(placed.rename.clone());
            match el.tag() {
                "body" => self.body(&placed, 0)?,
                "geom" if self.left_out(&el, false)? => el.check_attributes("geom")?,
                "geom" => {
                    let (geom, _) = self.geom(&el, &placement)?;
                    name_place(&mut self.places, &mut self.replicates, "geom", &geom.name, &el);
                    self.builder.add_world_geom(geom);
                }
                "site" => {
                    let site = self.site(&el, &placement)?;
                    name_place(&mut self.places, &mut self.replicates, "site", &site.name, &el);
                    self.builder.add_world_site(site);
                }
                "camera" | "light" => {}
                tag => return Err(el.unsupported(format!("<{tag}> in <worldbody>"))),
            }
        }
        Ok(())
    }

    /// The children of `at` (a body or the world), with the contents of every `<frame>` and
    /// every `<replicate>`'s copies among them, recursively, in their place: each with the
    /// class its defaults come from, where the frames around it put it, and how the replicate
    /// copy it is in renames it.
    fn contents(
        &mut self,
        at: Located<'a>,
        childclass: &str,
        placement: Placement,
        rename: Option<Rc<Rename>>,
    ) -> Result<Vec<Placed<'a>>, MjcfError> {
        let mut out = Vec::new();
        for child in self.parsed.children(at) {
            let tag = child.node.tag_name().name();
            if !matches!(tag, "frame" | "replicate") {
                out.push(Placed { at: child, childclass: childclass.to_string(), placement, rename: rename.clone() });
                continue;
            }
            let el = Element::new(child, None);
            el.check_attributes(tag)?;
            let class = el.string("childclass").unwrap_or_else(|| childclass.to_string());
            self.defaults.lookup(child, &class)?;
            if tag == "replicate" {
                out.extend(self.replicate(&el, &class, placement, &rename)?);
                continue;
            }
            let pos = Vector3::from(el.array::<3>("pos")?.unwrap_or([0.0; 3]));
            let quat = orientation(&el, &self.settings.angles)?.unwrap_or_else(Quat::identity);
            out.extend(self.contents(child, &class, placement.then(pos, quat), rename.clone())?);
        }
        Ok(out)
    }

    /// A `<replicate>`'s copies of its contents, inside the copy `outer` of an enclosing one.
    fn replicate(
        &mut self,
        el: &Element<'a, '_>,
        class: &str,
        placement: Placement,
        outer: &Option<Rc<Rename>>,
    ) -> Result<Vec<Placed<'a>>, MjcfError> {
        // A nested replicate is read once per enclosing copy: one entry holds all its copies.
        let origin = (el.at.file.to_path_buf(), el.at.node.range().start);
        let index = match self.replicates.iter().position(|r| r.origin == origin) {
            Some(index) => index,
            None => {
                self.replicates.push(Replicate { origin, ..Replicate::default() });
                self.replicates.len() - 1
            }
        };
        let mut out = Vec::new();
        for (pos, quat, suffix) in replicate::copies(el, &self.settings.angles)? {
            let suffix = suffix + outer.as_ref().map_or("", |o| o.suffix.as_str());
            let rename = Rc::new(Rename { suffix, replicate: index, references: None });
            self.replicates[index].copies.push(rename.clone());
            out.extend(self.contents(el.at, class, placement.then(pos, quat), Some(rename))?);
        }
        Ok(out)
    }

    /// A `<body>` (a child of body `parent`, 0 for the world) and the bodies inside it.
    fn body(&mut self, placed: &Placed<'a>, parent: usize) -> Result<(), MjcfError> {
        let (at, placement) = (placed.at, &placed.placement);
        let el = Element::new(at, None).renamed(placed.rename.clone());
        el.check_attributes("body")?;
        let childclass = el.string("childclass").unwrap_or_else(|| placed.childclass.clone());
        self.defaults.lookup(at, &childclass)?;
        let mut spec = BodySpec::new(el.string("name").unwrap_or_default());
        let pos = Vector3::from(el.array::<3>("pos")?.unwrap_or([0.0; 3]));
        let quat = orientation(&el, &self.settings.angles)?.unwrap_or_else(Quat::identity);
        (spec.pos, spec.quat) = placement.place(pos, quat);
        spec.mocap = el.boolean("mocap")?.unwrap_or(false);
        spec.gravcomp = el.number_or("gravcomp", 0.0)?;

        let contents = self.contents(at, &childclass, Placement::identity(), placed.rename.clone())?;
        let from_geoms = match self.settings.inertia_from_geom {
            InertiaFromGeom::Always => true,
            InertiaFromGeom::Never => false,
            InertiaFromGeom::Auto => !contents.iter().any(|c| c.at.node.has_tag_name("inertial")),
        };
        let mut parts = BodyParts::default();
        for placed in contents {
            self.body_content(placed, from_geoms, &mut spec, &mut parts)?;
        }
        // Nothing gives the body inertia: MuJoCo's compiler then takes its own placement, as
        // written (before any frame), as its inertial frame, where its weight and its `body`
        // sensors are read.
        // An `<inertial>` without mass keeps its frame and inertia, as in MuJoCo.
        let undefined = parts.inertial.is_none() && (!from_geoms || parts.geoms.is_empty());
        let (mass, com, inertia) = match (from_geoms, &parts.inertial) {
            (true, _) => combine(&parts.geoms),
            (false, Some(part)) if part.mass == 0.0 => {
                let r = part.quat.to_rotation_matrix();
                (0.0, part.pos, r * Matrix3::from_diagonal(&part.inertia) * r.transpose())
            }
            (false, Some(part)) => combine(std::slice::from_ref(part)),
            (false, None) => (0.0, Vector3::zeros(), Matrix3::zeros()),
        };
        let massless_frame = match &parts.inertial {
            Some(part) if !from_geoms && part.mass == 0.0 && part.inertia == Vector3::zeros() => Some(part.quat),
            _ => None,
        };
        let (mass, inertia) = self.settings.bounds.apply(mass, inertia);
        (spec.mass, spec.com, spec.inertia) = (mass, if undefined { pos } else { com }, inertia);
        spec.inertia_axes = if undefined { Some(quat) } else { massless_frame };
        let free = matches!(spec.joints.as_slice(), [joint] if joint.kind == JointKind::Free);
        if free && parts.bodies.is_empty() && parts.align.unwrap_or(self.settings.align_free) {
            let axes = match from_geoms {
                true => align::inertial_frame(&parts.geoms),
                false => parts.inertial_axes.unwrap_or_else(Quat::identity),
            };
            align::align(&mut spec, axes);
        }

        let index = self.bodies.len() + 1;
        if !spec.name.is_empty() && self.body_index.insert(spec.name.clone(), index).is_some() {
            return Err(el.invalid(format!("body name `{}` is used twice", spec.name)));
        }
        name_place(&mut self.places, &mut self.replicates, "body", &spec.name, &el);
        self.bodies.push((parent, spec));
        for child in &parts.bodies {
            self.body(child, index)?;
        }
        Ok(())
    }

    /// One element inside a body: its joints, geoms and sites join `spec`, its mass parts and
    /// child bodies `parts`.
    fn body_content(
        &mut self,
        placed: Placed<'a>,
        from_geoms: bool,
        spec: &mut BodySpec,
        parts: &mut BodyParts<'a>,
    ) -> Result<(), MjcfError> {
        let Placed { at, ref childclass, placement, .. } = placed;
        let el = self.defaults.element(at, childclass)?.renamed(placed.rename.clone());
        match el.tag() {
            "inertial" => {
                let part = self.inertial(&el)?.placed(&placement);
                parts.inertial_axes = Some(match el.array::<6>("fullinertia")? {
                    Some(full) => placement.place(Vector3::zeros(), align::full_inertia_frame(full)).1,
                    None => part.quat,
                });
                parts.inertial = Some(part);
            }
            "joint" => {
                let (mut joint, range) = self.joint(&el)?;
                if let Some([time_constant, damping_ratio]) = spring_damper(&el)? {
                    let earlier: usize = self.bodies.iter().map(|(_, b)| b.joints.len()).sum();
                    let joint = earlier + spec.joints.len();
                    self.deferred.spring_dampers.push(SpringDamper { joint, time_constant, damping_ratio });
                }
                let scalar = matches!(joint.kind, JointKind::Hinge | JointKind::Slide);
                self.target_ranges.insert(("joint", joint.name.clone()), (range, scalar));
                joint.pos = placement.place(joint.pos, Quat::identity()).0;
                joint.axis = placement.turn(&joint.axis);
                name_place(&mut self.places, &mut self.replicates, "joint", &joint.name, &el);
                spec.joints.push(joint);
            }
            "freejoint" => {
                el.check_attributes("freejoint")?;
                parts.align = match el.keyword("align", &["false", "true", "auto"])? {
                    Some("true") => Some(true),
                    Some("false") => Some(false),
                    _ => None,
                };
                let joint = JointSpec::free(el.string("name").unwrap_or_default());
                name_place(&mut self.places, &mut self.replicates, "joint", &joint.name, &el);
                self.target_ranges.insert(("joint", joint.name.clone()), ([0.0; 2], false));
                spec.joints.push(joint);
            }
            "geom" => {
                // As MuJoCo: only geoms in `inertiagrouprange` give their body mass.
                let [lo, hi] = self.settings.inertia_groups;
                let weighs = from_geoms && (lo..=hi).contains(&el.integer("group")?.unwrap_or(0));
                let discarded = self.left_out(&el, weighs)?;
                if discarded && !weighs {
                    return el.check_attributes("geom");
                }
                let (geom, part) = self.geom(&el, &placement)?;
                parts.geoms.extend(part.filter(|_| weighs));
                if !discarded {
                    name_place(&mut self.places, &mut self.replicates, "geom", &geom.name, &el);
                    spec.geoms.push(geom);
                }
            }
            "site" => {
                let site = self.site(&el, &placement)?;
                name_place(&mut self.places, &mut self.replicates, "site", &site.name, &el);
                spec.sites.push(site);
            }
            "body" => parts.bodies.push(placed),
            "camera" | "light" => {}
            tag => return Err(el.unsupported(format!("<{tag}> in <body>"))),
        }
        Ok(())
    }

    /// Scales masses for `settotalmass` and hands the bodies to the builder.
    fn finish_bodies(&mut self) -> Result<(), MjcfError> {
        if let Some(total) = self.settings.total_mass {
            let current: f64 = self.bodies.iter().map(|(_, b)| b.mass).sum();
            if current > 0.0 {
                let scale = total / current;
                for (_, body) in &mut self.bodies {
                    body.mass *= scale;
                    body.inertia *= scale;
                }
            }
        }
        for (parent, spec) in std::mem::take(&mut self.bodies) {
            let name = spec.name.clone();
            self.builder.add_body(parent, spec).map_err(|e| MjcfError {
                location: Element::new(self.parsed.root(), None).location(),
                kind: MjcfErrorKind::Invalid(format!("body `{name}`: {e}")),
            })?;
        }
        Ok(())
    }

    fn inertial(&self, el: &Element<'_, '_>) -> Result<Part, MjcfError> {
        el.check_attributes("inertial")?;
        let mass = el.number("mass")?.ok_or_else(|| el.invalid("missing attribute `mass`"))?;
        if mass < 0.0 {
            return Err(el.invalid(format!("negative mass {mass}")));
        }
        let pos = Vector3::from(el.array::<3>("pos")?.ok_or_else(|| el.invalid("missing attribute `pos`"))?);
        let quat = orientation(el, &self.settings.angles)?.unwrap_or_else(Quat::identity);
        match (el.array::<3>("diaginertia")?, el.array::<6>("fullinertia")?) {
            (Some(d), None) => Ok(Part { mass, inertia: Vector3::from(d), pos, quat }),
            (None, Some([xx, yy, zz, xy, xz, yz])) => {
                let full = Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz);
                let (axes, moments) = crate::math::principal_axes(&full);
                // As MuJoCo: every principal moment at least mjEPS.
                if full.symmetric_eigenvalues().min() < 1e-14 {
                    return Err(el.invalid("inertia must have positive eigenvalues"));
                }
                Ok(Part { mass, inertia: moments, pos, quat: quat * axes })
            }
            (None, None) => Err(el.invalid("needs diaginertia or fullinertia")),
            (Some(_), Some(_)) => Err(el.invalid("give diaginertia or fullinertia, not both")),
        }
    }

    /// A joint, and its range as MuJoCo keeps it for `inheritrange` (in radians when limited,
    /// as written otherwise; `0 0` when none).
    fn joint(&self, el: &Element<'_, '_>) -> Result<(JointSpec, [f64; 2]), MjcfError> {
        el.check_attributes("joint")?;
        let name = el.string("name").unwrap_or_default();
        let kind = match el.keyword("type", &["free", "ball", "slide", "hinge"])?.unwrap_or("hinge") {
            "free" => JointKind::Free,
            "ball" => JointKind::Ball,
            "slide" => JointKind::Slide,
            _ => JointKind::Hinge,
        };
        let angular = |x: f64| if kind == JointKind::Slide { x } else { self.settings.angles.angle(x) };
        let autolimits = self.settings.autolimits;
        let (ball, free) = (kind == JointKind::Ball, kind == JointKind::Free);
        // As MuJoCo: a free joint has no limits, and neither it nor a ball joint a force range.
        let range = if free { None } else { el.limits("limited", "range", autolimits, !ball)? };
        let actuator_force_range =
            if free || ball { None } else { el.limits("actuatorfrclimited", "actuatorfrcrange", autolimits, true)? };
        let ((stiffness, stiffness_poly), (damping, damping_poly)) =
            (el.polynomial("stiffness")?, el.polynomial("damping")?);
        let mut spec = JointSpec {
            name,
            kind,
            pos: Vector3::from(el.array::<3>("pos")?.unwrap_or([0.0; 3])),
            axis: Vector3::from(el.array::<3>("axis")?.unwrap_or([0.0, 0.0, 1.0])),
            reference: angular(el.number_or("ref", 0.0)?),
            stiffness,
            spring_ref: angular(el.number_or("springref", 0.0)?),
            damping,
            stiffness_poly,
            damping_poly,
            armature: el.number_or("armature", 0.0)?,
            range: None,
            limit_margin: el.number_or("margin", 0.0)?,
            solref_limit: el.padded("solreflimit", DEFAULT_SOLREF)?,
            solimp_limit: el.padded("solimplimit", DEFAULT_SOLIMP)?,
            frictionloss: el.number_or("frictionloss", 0.0)?,
            solref_friction: el.padded("solreffriction", DEFAULT_SOLREF)?,
            solimp_friction: el.padded("solimpfriction", DEFAULT_SOLIMP)?,
            actuator_force_range,
            actuator_gravcomp: el.boolean("actuatorgravcomp")?.unwrap_or(false),
        };
        if let Some([lo, hi]) = range {
            if ball && lo != 0.0 {
                return Err(el.invalid("a ball joint's range must start at 0"));
            }
            spec.range = Some([angular(lo), angular(hi)]);
        }
        if kind == JointKind::Hinge || kind == JointKind::Slide {
            if spec.axis.norm() == 0.0 {
                return Err(el.invalid("axis has zero length"));
            }
        } else {
            spec.axis = Vector3::z();
        }
        let kept = spec.range.or(el.array::<2>("range")?).unwrap_or([0.0; 2]);
        Ok((spec, kept))
    }

    /// `<asset>`: meshes are read (their convex hulls; one without volume is an error where a
    /// geom needs it, as in MuJoCo, which compiles it for a geom that only draws), rendering
    /// assets skipped.
    fn assets(&mut self, at: Located<'a>) -> Result<(), MjcfError> {
        for child in self.parsed.children(at) {
            let el = self.defaults.element(child, MAIN)?;
            match el.tag() {
                "mesh" => {
                    el.check_attributes("mesh")?;
                    let (name, hull) = self.mesh(&el)?;
                    self.meshes.insert(name, hull);
                }
                "hfield" => {
                    el.check_attributes("hfield")?;
                    // As MuJoCo: a height field from a file is named after it by default.
                    let name =
                        el.string("name").or_else(|| el.string("file").map(|f| file_stem(&f))).unwrap_or_default();
                    let field = self.hfield(&el)?;
                    if self.hfields.insert(name.clone(), Arc::new(field)).is_some() {
                        return Err(el.invalid(format!("repeated name `{name}` in hfield")));
                    }
                }
                "material" => {
                    el.check_attributes("material")?;
                    let rgba = el.array::<4>("rgba")?.unwrap_or([1.0; 4]).map(|c| c as f32);
                    let name = el.string("name").unwrap_or_default();
                    if self.materials.insert(name.clone(), rgba).is_some() {
                        return Err(el.invalid(format!("repeated name `{name}` in material")));
                    }
                }
                tag if RENDERING_ASSETS.contains(&tag) => {}
                tag => return Err(el.unsupported(format!("asset <{tag}>"))),
            }
        }
        Ok(())
    }

    /// A `<mesh>` asset's name and mesh (an error kept for the geoms that need it): from its
    /// file, or from inline `vertex` (and `face`) data, placed, scaled and weighed as its
    /// attributes say.
    fn mesh(&self, el: &Element<'_, '_>) -> Result<(String, Result<Arc<ConvexHull>, MjcfError>), MjcfError> {
        let inertia = match el.keyword("inertia", &["legacy", "convex", "exact", "shell"])? {
            Some("convex") => MeshInertia::Convex,
            Some("exact") => MeshInertia::Exact,
            Some("shell") => MeshInertia::Shell,
            _ => MeshInertia::Legacy,
        };
        let refquat = el.array::<4>("refquat")?.unwrap_or([1.0, 0.0, 0.0, 0.0]);
        let max_hull_vertices = match el.integer("maxhullvert")?.unwrap_or(-1) {
            -1 => None,
            n if n >= 4 => Some(n as usize),
            _ => return Err(el.invalid("maxhullvert must be larger than 3")),
        };
        let options = MeshOptions {
            scale: Vector3::from(el.array::<3>("scale")?.unwrap_or([1.0; 3])),
            refpos: Vector3::from(el.array::<3>("refpos")?.unwrap_or([0.0; 3])),
            refquat: Quat::new(refquat[0], refquat[1], refquat[2], refquat[3]),
            inertia,
            max_hull_vertices,
        };
        if options.refquat.norm_squared() == 0.0 {
            return Err(el.invalid("refquat is zero"));
        }
        if el.at.node.children().any(|c| c.has_tag_name("plugin")) {
            return Err(el.unsupported("a mesh made by a plugin (`<plugin>` in `<mesh>`)"));
        }
        if let Some(vertex) = el.numbers("vertex")? {
            let name = el.string("name").ok_or_else(|| el.invalid("a mesh given inline needs a `name`"))?;
            if vertex.len() % 3 != 0 || vertex.len() < 12 {
                return Err(el.invalid("`vertex` needs at least four points of three numbers"));
            }
            let points: Vec<Vector3<f64>> = vertex.chunks(3).map(Vector3::from_column_slice).collect();
            let face = el.numbers("face")?.unwrap_or_default();
            if face.len() % 3 != 0 || face.iter().any(|&k| k < 0.0 || k.fract() != 0.0) {
                return Err(el.invalid("`face` needs triangles of three vertex indices"));
            }
            let faces: Vec<[usize; 3]> = face.chunks(3).map(|f| [f[0], f[1], f[2]].map(|k| k as usize)).collect();
            let hull = ConvexHull::from_data(&points, &faces, &options, &name).map_err(|e| el.invalid(e.to_string()));
            return Ok((name, hull));
        }
        let file = el.string("file").ok_or_else(|| el.invalid("a mesh needs `file` or `vertex`"))?;
        let name = el.string("name").unwrap_or_else(|| file_stem(&file));
        // A file that cannot be read is an error now, and so is a mesh that cannot be weighed,
        // as in MuJoCo (unless `discardvisual` may leave it unused: MuJoCo then drops it before
        // weighing it); a mesh without a hull only where a geom needs it.
        match ConvexHull::load(&self.asset_path(&file), &options) {
            Err(e @ (MeshError::Read { .. } | MeshError::Format { .. })) => Err(el.invalid(e.to_string())),
            Err(e @ MeshError::Inertia { .. }) if !self.settings.discard_visual => Err(el.invalid(e.to_string())),
            hull => Ok((name, hull.map_err(|e| el.invalid(e.to_string())))),
        }
    }

    /// Where a mesh or height field file is, as MuJoCo finds it: in `meshdir` relative to the
    /// main model's directory (whichever file declares the asset), named by the part after the
    /// last slash of either kind under `strippath`.
    fn asset_path(&self, file: &str) -> std::path::PathBuf {
        let base = self.parsed.base();
        let dir = self.settings.mesh_dir.as_deref().map_or(base.to_path_buf(), |d| base.join(d));
        match self.settings.strip_path {
            true => dir.join(file.rsplit(['/', '\\']).next().unwrap_or_default()),
            false => dir.join(file),
        }
    }

    /// An `<hfield>` asset: its elevations written inline (`elevation`, rows from +y to -y, or
    /// none: all zero), or
    /// read from MuJoCo's binary format (two 32-bit integers, rows and columns, then the
    /// elevations as 32-bit floats, little-endian). PNG images are refused by name.
    fn hfield(&self, el: &Element<'_, '_>) -> Result<HeightField, MjcfError> {
        let size = el.array::<4>("size")?.ok_or_else(|| el.invalid("a height field needs `size`"))?;
        let dimension = |name: &str| -> Result<usize, MjcfError> {
            let n = el.integer(name)?.unwrap_or(0);
            usize::try_from(n).map_err(|_| el.invalid(format!("`{name}` cannot be negative")))
        };
        let (nrow, ncol) = (dimension("nrow")?, dimension("ncol")?);
        let count = nrow.checked_mul(ncol).ok_or_else(|| el.invalid("nrow × ncol is too large"))?;
        let (nrow, ncol, raw) = match el.string("file") {
            Some(_) if nrow > 0 || ncol > 0 || el.has("elevation") => {
                return Err(el.invalid("hfield specified from file and manually"));
            }
            Some(file) => self.hfield_file(el, &file)?,
            // As MuJoCo: written top row first, the top row standing at +y.
            None => {
                let elevation = el.numbers("elevation")?.unwrap_or_else(|| vec![0.0; count]);
                let rows = elevation.chunks(ncol.max(1)).rev();
                (nrow, ncol, rows.flatten().map(|&e| e as f32).collect())
            }
        };
        HeightField::new(nrow, ncol, size, &raw).map_err(|e| el.invalid(e.to_string()))
    }

    /// A height field file: a PNG image (by its name), else MuJoCo's binary format; its rows,
    /// columns and raw elevations.
    fn hfield_file(&self, el: &Element<'_, '_>, file: &str) -> Result<(usize, usize, Vec<f32>), MjcfError> {
        let path = self.asset_path(file);
        let bytes = std::fs::read(&path).map_err(|e| el.invalid(format!("{}: {e}", path.display())))?;
        let read = match file.to_ascii_lowercase().ends_with(".png") {
            true => hfield::png_elevations(&bytes),
            false => hfield::binary_elevations(&bytes),
        };
        read.map_err(|e| el.invalid(format!("{}: {e}", path.display())))
    }

    /// A geom (placed in its holder's frame by `placement`) and, for shapes with volume, its
    /// mass properties as a part of its body.
    fn geom(&self, el: &Element<'_, '_>, placement: &Placement) -> Result<(Geom<f64>, Option<Part>), MjcfError> {
        el.check_attributes("geom")?;
        let kind = el.keyword(
            "type",
            &["plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"],
        )?;
        let size = el.prefix_numbers("size")?.unwrap_or_default();
        let fromto = el.array::<6>("fromto")?;
        let segment = fromto.map(|[a, b, c, d, e, f]| (Vector3::new(a, b, c), Vector3::new(d, e, f)));
        let dim = |k: usize| -> Result<f64, MjcfError> {
            size.get(k)
                .copied()
                .filter(|x| *x > 0.0)
                .ok_or_else(|| el.invalid(format!("size[{k}] must be given and positive")))
        };
        let half_length = |k: usize| -> Result<f64, MjcfError> {
            match segment {
                Some((a, b)) if (b - a).norm() > 0.0 => Ok((b - a).norm() / 2.0),
                Some(_) => Err(el.invalid("fromto has zero length")),
                None => dim(k),
            }
        };
        let shape = match kind.unwrap_or("sphere") {
            "plane" => Shape::Plane,
            "sphere" => Shape::Sphere { radius: dim(0)? },
            "capsule" => Shape::Capsule { radius: dim(0)?, half_length: half_length(1)? },
            "cylinder" => Shape::Cylinder { radius: dim(0)?, half_length: half_length(1)? },
            // As MuJoCo: along a `fromto`, the two other half-sizes are both size[0].
            "box" | "ellipsoid" => {
                let across = if segment.is_some() { dim(0)? } else { dim(1)? };
                let sizes = Vector3::new(dim(0)?, across, half_length(2)?);
                if kind == Some("box") { Shape::Box { half_extents: sizes } } else { Shape::Ellipsoid { radii: sizes } }
            }
            "hfield" => {
                let name = el.string("hfield").ok_or_else(|| el.invalid("a height field geom needs `hfield`"))?;
                let field = self.hfields.get(&name).ok_or_else(|| el.invalid(format!("no hfield asset `{name}`")))?;
                Shape::HeightField { field: field.clone() }
            }
            "mesh" => {
                let name = el.string("mesh").ok_or_else(|| el.invalid("a mesh geom needs `mesh`"))?;
                let hull = self.meshes.get(&name).ok_or_else(|| el.invalid(format!("no mesh asset `{name}`")))?;
                Shape::Mesh { hull: hull.clone()? }
            }
            other => return Err(el.unsupported(format!("geom type `{other}`"))),
        };
        if el.has("mesh") && !matches!(shape, Shape::Mesh { .. }) {
            return Err(
                el.unsupported_attribute("mesh", "a primitive fitted to a mesh (`mesh` on a geom of another type)")
            );
        }
        let (pos, quat) = match segment {
            // As MuJoCo: the geom's z axis points from `to` back to `from`.
            Some((a, b)) => ((a + b) / 2.0, z_to(&(a - b))),
            None => (
                Vector3::from(el.array::<3>("pos")?.unwrap_or([0.0; 3])),
                orientation(el, &self.settings.angles)?.unwrap_or_else(Quat::identity),
            ),
        };
        let (pos, quat) = placement.place(pos, quat);
        // A mesh sits in its principal frame: the geom is placed by that frame, as in MuJoCo.
        let (pos, quat) = match &shape {
            Shape::Mesh { hull } => (pos + quat.rotate(&hull.frame_pos), quat * hull.frame_quat),
            _ => (pos, quat),
        };
        let mut geom = Geom::new(el.string("name").unwrap_or_default(), shape);
        geom.pos = pos;
        geom.quat = quat;
        geom.friction = el.padded("friction", geom.friction)?;
        geom.solref = el.padded("solref", geom.solref)?;
        geom.solimp = el.padded("solimp", geom.solimp)?;
        geom.margin = el.number_or("margin", 0.0)?;
        geom.gap = el.number_or("gap", 0.0)?;
        let bits = |name: &str, default: i64| -> Result<u32, MjcfError> {
            let v = el.integer(name)?.unwrap_or(default);
            u32::try_from(v).map_err(|_| el.invalid(format!("`{name}` must be a non-negative 32-bit integer")))
        };
        geom.contype = bits("contype", 1)?;
        geom.conaffinity = bits("conaffinity", 1)?;
        refuse_cut_hull(el, &geom, self.referenced_geoms.contains(&geom.name))?;
        geom.condim = match el.integer("condim")?.unwrap_or(3) {
            d @ (1 | 3 | 4 | 6) => d as u8,
            d => return Err(el.invalid(format!("condim {d} is not 1, 3, 4 or 6"))),
        };
        geom.priority = el.integer("priority")?.unwrap_or(0) as i32;
        geom.solmix = el.number_or("solmix", 1.0)?;
        geom.rgba = self.colour(el)?;
        if matches!(geom.shape, Shape::Plane) {
            geom.plane_size = el.padded("size", [0.0; 3])?.map(|x| x as f32);
        }
        geom.group = el.integer("group")?.unwrap_or(0) as i32;
        let mass = el.number("mass")?;
        let density = el.number_or("density", 1000.0)?;
        if mass.is_some_and(|m| m < 0.0) || density < 0.0 {
            return Err(el.invalid("mass and density must be non-negative"));
        }
        let part = geom_mass(&geom.shape, density, mass).map(|(mass, inertia)| Part { mass, inertia, pos, quat });
        Ok((geom, part))
    }

    /// A geom's drawing colour, by MuJoCo's rule: its `rgba` where that differs from the
    /// default, else its material's, else the default.
    fn colour(&self, el: &Element<'_, '_>) -> Result<[f32; 4], MjcfError> {
        let own = el.array::<4>("rgba")?.map(|c| c.map(|x| x as f32)).filter(|&c| c != DEFAULT_RGBA);
        match (own, el.string("material")) {
            (Some(rgba), _) => Ok(rgba),
            (None, Some(name)) => {
                self.materials.get(&name).copied().ok_or_else(|| el.invalid(format!("unknown material `{name}`")))
            }
            (None, None) => Ok(DEFAULT_RGBA),
        }
    }

    /// True when the geom is left out of the model: one that can touch nothing (`contype` and
    /// `conaffinity` zero) and that no other element names, under `discardvisual`, or else where
    /// its mesh has no volume and it does not weigh (`weighs`) — it can then neither touch, weigh,
    /// nor be read (MuJoCo compiles it, to draw it).
    fn left_out(&self, el: &Element<'_, '_>, weighs: bool) -> Result<bool, MjcfError> {
        let visual = el.integer("contype")?.unwrap_or(1) == 0 && el.integer("conaffinity")?.unwrap_or(1) == 0;
        let named = el.raw("name").is_some_and(|name| self.referenced_geoms.contains(name));
        Ok(visual && !named && (self.settings.discard_visual || (!weighs && self.flat_mesh(el))))
    }

    /// True when the geom is a mesh whose asset has no hull (no volume).
    fn flat_mesh(&self, el: &Element<'_, '_>) -> bool {
        let mesh = el.string("mesh").and_then(|name| self.meshes.get(&name));
        el.string("type").as_deref() == Some("mesh") && mesh.is_some_and(|hull| hull.is_err())
    }

    fn site(&self, el: &Element<'_, '_>, placement: &Placement) -> Result<Site<f64>, MjcfError> {
        el.check_attributes("site")?;
        let (pos, quat) = match el.array::<6>("fromto")? {
            Some([a, b, c, d, e, f]) => {
                let (from, to) = (Vector3::new(a, b, c), Vector3::new(d, e, f));
                // As MuJoCo: the site's z axis points from `to` back to `from`.
                ((from + to) / 2.0, z_to(&(from - to)))
            }
            None => (
                Vector3::from(el.array::<3>("pos")?.unwrap_or([0.0; 3])),
                orientation(el, &self.settings.angles)?.unwrap_or_else(Quat::identity),
            ),
        };
        let (pos, quat) = placement.place(pos, quat);
        Ok(Site { name: el.string("name").unwrap_or_default(), pos, quat, zone: site_zone(el)? })
    }

    /// A `<fixed>` or `<spatial>` tendon, read with the renaming of the replicate copy it is
    /// made for.
    fn tendon(&mut self, child: Located<'a>, rename: Option<Rc<Rename>>) -> Result<(), MjcfError> {
        let el = self.defaults.element(child, MAIN)?.renamed(rename.clone());
        if !matches!(el.tag(), "fixed" | "spatial") {
            return Err(el.invalid(format!("unexpected <{}> in <tendon>", el.tag())));
        }
        el.check_attributes("tendon")?;
        let autolimits = self.settings.autolimits;
        let actuator_force_range = el.limits("actuatorfrclimited", "actuatorfrcrange", autolimits, true)?;
        let path =
            if el.tag() == "fixed" { self.fixed_path(child, &rename)? } else { self.spatial_path(child, &rename)? };
        let range = el.limits("limited", "range", autolimits, true)?;
        let kept = el.array::<2>("range")?.unwrap_or([0.0; 2]);
        let spring_length = match el.numbers("springlength")? {
            None => None,
            Some(v) if v.len() == 1 && v[0] == -1.0 => None,
            Some(v) if v.len() == 2 && v[0] == -1.0 && v[1] == -1.0 => None,
            Some(v) if v.len() == 1 => Some([v[0], v[0]]),
            Some(v) if v.len() == 2 && v[0] <= v[1] => Some([v[0], v[1]]),
            Some(_) => return Err(el.invalid("springlength needs one value or two increasing values")),
        };
        // A spatial tendon's rest length is read off the kinematics by the constants; until
        // then, its length at zero.
        let spatial = matches!(path, PathSpec::Spatial(_));
        let spring_length = match spring_length {
            None if spatial => {
                self.deferred.rest_lengths.push(self.tendon_count);
                Some([0.0; 2])
            }
            given => given,
        };
        self.tendon_count += 1;
        let mut spec = TendonSpec::with_path(el.string("name").unwrap_or_default(), path);
        self.places.insert(("tendon", spec.name.clone()), el.location());
        self.target_ranges.insert(("tendon", spec.name.clone()), (kept, true));
        spec.actuator_force_range = actuator_force_range;
        (spec.stiffness, spec.stiffness_poly) = el.polynomial("stiffness")?;
        (spec.damping, spec.damping_poly) = el.polynomial("damping")?;
        spec.spring_length = spring_length;
        spec.range = range;
        spec.limit_margin = el.number_or("margin", 0.0)?;
        spec.solref_limit = el.padded("solreflimit", DEFAULT_SOLREF)?;
        spec.frictionloss = el.number_or("frictionloss", 0.0)?;
        spec.solref_friction = el.padded("solreffriction", DEFAULT_SOLREF)?;
        spec.solimp_friction = el.padded("solimpfriction", DEFAULT_SOLIMP)?;
        spec.solimp_limit = el.padded("solimplimit", DEFAULT_SOLIMP)?;
        self.builder.add_tendon(spec);
        Ok(())
    }

    /// A `<fixed>` tendon's `<joint>` children.
    fn fixed_path(&self, at: Located<'a>, rename: &Option<Rc<Rename>>) -> Result<PathSpec, MjcfError> {
        let mut joints = Vec::new();
        for j in self.parsed.children(at) {
            let jel = Element::new(j, None).renamed(rename.clone());
            if jel.tag() != "joint" {
                return Err(jel.invalid(format!("unexpected <{}> in a fixed tendon", jel.tag())));
            }
            jel.check_attributes("fixed/joint")?;
            let name = jel.string("joint").ok_or_else(|| jel.invalid("missing attribute `joint`"))?;
            if !self.places.contains_key(&("joint", name.clone())) {
                return Err(jel.invalid(format!("no joint named `{name}`")));
            }
            joints.push((name, jel.number_or("coef", 1.0)?));
        }
        Ok(PathSpec::Fixed(joints))
    }

    /// A `<spatial>` tendon's `<site>`, `<geom>` and `<pulley>` children, in order, each
    /// naming an existing site or geom (the path's order is checked with the model).
    fn spatial_path(&self, at: Located<'a>, rename: &Option<Rc<Rename>>) -> Result<PathSpec, MjcfError> {
        let mut points = Vec::new();
        for p in self.parsed.children(at) {
            let pel = Element::new(p, None).renamed(rename.clone());
            let named = |kind: &'static str, key: &str| match pel.string(key) {
                Some(name) if self.places.contains_key(&(kind, name.clone())) => Ok(name),
                Some(name) => Err(pel.invalid(format!("no {kind} named `{name}`"))),
                None => Err(pel.invalid(format!("missing attribute `{key}`"))),
            };
            points.push(match pel.tag() {
                "site" => {
                    pel.check_attributes("spatial/site")?;
                    PointSpec::Site(named("site", "site")?)
                }
                "geom" => {
                    pel.check_attributes("spatial/geom")?;
                    let side = if pel.has("sidesite") { Some(named("site", "sidesite")?) } else { None };
                    PointSpec::Wrap { geom: named("geom", "geom")?, side }
                }
                "pulley" => {
                    pel.check_attributes("spatial/pulley")?;
                    let divisor = pel.number("divisor")?.ok_or_else(|| pel.invalid("missing attribute `divisor`"))?;
                    PointSpec::Pulley(divisor)
                }
                other => return Err(pel.invalid(format!("unexpected <{other}> in a spatial tendon"))),
            });
        }
        Ok(PathSpec::Spatial(points))
    }

    /// An actuator element, read with the renaming of the replicate copy it is made for.
    fn actuator_element(&mut self, child: Located<'a>, rename: Option<Rc<Rename>>) -> Result<(), MjcfError> {
        let el = self.defaults.element(child, MAIN)?.renamed(rename);
        let mut records = self.defaults.actuators(child.node.attribute("class").unwrap_or(MAIN));
        let (record, ancestors) = records.split_first_mut().expect("a class has its own record");
        record.apply(&el, ancestors)?;
        if el.tag() == "adhesion" {
            return Err(el.unsupported("<adhesion> actuators"));
        }
        let (spec, scales) = self.actuator(&el, record)?;
        if scales.iter().any(Option::is_some) {
            self.deferred.muscle_scales.push((self.actuator_count, scales));
        }
        self.actuator_count += 1;
        self.places.insert(("actuator", spec.name.clone()), el.location());
        self.builder.add_actuator(spec);
        Ok(())
    }

    /// An actuator element shaped as `record` (its class's record, rewritten by it), and the
    /// scales of its muscle terms whose peak forces the constants resolve (gain, bias).
    fn actuator(&self, el: &Element<'_, '_>, record: &Record) -> Result<(ActuatorSpec, [Option<f64>; 2]), MjcfError> {
        el.check_attributes("actuator")?;
        let reference = el.string("refsite");
        let crank = el.string("cranksite");
        let target =
            match (el.string("joint"), el.string("jointinparent"), el.string("tendon"), el.string("site"), crank) {
                (Some(j), None, None, None, None) => Target::Joint(j),
                (None, Some(j), None, None, None) => Target::JointInParent(j),
                (None, None, Some(t), None, None) => Target::Tendon(t),
                (None, None, None, Some(site), None) => Target::Site { site, reference: reference.clone() },
                (None, None, None, None, Some(crank)) => {
                    let slider =
                        el.string("slidersite").ok_or_else(|| el.invalid("a slider-crank needs a `slidersite`"))?;
                    Target::SliderCrank { crank, slider, length: el.number_or("cranklength", 0.0)? }
                }
                (None, None, None, None, None) => {
                    return Err(el.invalid("an actuator needs a `joint`, `tendon`, `site` or `cranksite`"));
                }
                _ => {
                    return Err(
                        el.invalid("an actuator drives one `joint`, `jointinparent`, `tendon`, `site` or `cranksite`")
                    );
                }
            };
        if el.has("slidersite") && !matches!(target, Target::SliderCrank { .. }) {
            return Err(el.invalid("`slidersite` goes with a `cranksite`"));
        }
        if reference.is_some() && !matches!(target, Target::Site { .. }) {
            return Err(el.invalid("`refsite` goes with a `site` transmission"));
        }
        let name = match &target {
            Target::Joint(name) | Target::JointInParent(name) => Some(("joint", name)),
            Target::Tendon(name) => Some(("tendon", name)),
            // Sites are found by the model builder, which names a missing one.
            Target::Site { .. } | Target::SliderCrank { .. } => None,
        };
        if let Some((kind, name)) = name.filter(|(kind, name)| !self.places.contains_key(&(*kind, (*name).clone()))) {
            return Err(el.invalid(format!("no {kind} named `{name}`")));
        }
        let mut spec = ActuatorSpec::motor(el.string("name").unwrap_or_default(), String::new());
        spec.target = target;
        spec.gear = el.padded("gear", [1.0, 0.0, 0.0, 0.0, 0.0, 0.0])?;
        let autolimits = self.settings.autolimits;
        let written = |range: [f64; 2]| (range != [0.0; 2]).then_some(range);
        spec.ctrl_range = if record.ctrl_limited {
            // A damper's control is limited whatever `ctrllimited` said before it.
            Some(record.ctrl_range)
        } else {
            el.limits_of("ctrllimited", "ctrlrange", written(record.ctrl_range), autolimits)?
        };
        spec.force_range = el.limits("forcelimited", "forcerange", autolimits, true)?;
        spec.act_range = el.limits_of("actlimited", "actrange", written(record.act_range), autolimits)?;
        spec.act_early = el.boolean("actearly")?.unwrap_or(false);
        spec.dynamics = record.dynamics(el)?;
        let stateful = spec.dynamics != Dynamics::None;
        match el.integer("actdim")? {
            None | Some(-1) => {}
            Some(d) if d == i64::from(stateful) => {}
            Some(d) => {
                return Err(el.unsupported_attribute(
                    "actdim",
                    format!("actdim=\"{d}\" (one activation per actuator with dynamics)"),
                ));
            }
        }
        let mut scales = [None; 2];
        (spec.gain, spec.bias) = record.terms(el, &mut scales)?;
        spec.length_range = el.array::<2>("lengthrange")?.unwrap_or([0.0; 2]);
        if record.inherit_range > 0.0 && record.servo_shaped() {
            self.inherit_range(el, &mut spec, record)?;
        }
        if let (Term::Affine([_, minus_kp, ratio]), kp) = (spec.bias, spec.gain.first_number())
            && kp == -minus_kp
            && ratio > 0.0
            && kp < 0.0
        {
            return Err(
                el.invalid("a damping ratio on a servo with a negative gain (MuJoCo's damping is not a number)")
            );
        }
        for (name, range) in [("ctrlrange", spec.ctrl_range), ("actrange", spec.act_range)] {
            if let Some([lo, hi]) = range.filter(|[lo, hi]| lo >= hi) {
                return Err(el.invalid(format!("`{name}` {lo} {hi} needs lo < hi")));
            }
        }
        if spec.act_range.is_some() && spec.dynamics == Dynamics::None {
            return Err(el.invalid("an activation range without activation dynamics"));
        }
        // MuJoCo 4 wraps the setpoint of a servo on a rotation: phyz follows it for a servo
        // without dynamics; one with dynamics (whose activation wraps too), or a `general` with
        // an affine gain shaped like a servo (which MuJoCo does not wrap), is refused.
        let rotation = match &spec.target {
            Target::Site { reference: Some(_), .. } => spec.gear[..3] == [0.0; 3],
            Target::Joint(name) | Target::JointInParent(name) => {
                self.target_ranges.get(&("joint", name.clone())).is_some_and(|&(_, s)| !s)
            }
            _ => false,
        };
        let servo = record.servo_shaped();
        let numerically = is_fixed_servo(&spec.gain, &spec.bias);
        if rotation && ((servo && spec.dynamics != Dynamics::None) || (!servo && numerically)) {
            return Err(el.unsupported("a servo on a rotation with dynamics or an affine gain (MuJoCo 4 wraps it)"));
        }
        Ok((spec, scales))
    }

    /// MuJoCo's `inheritrange` on a servo (fixed gain `kp`, affine bias `-kp`): its control
    /// range (an integrator's activation range) is its target's range about the middle, scaled
    /// by `record.inherit_range`, then read by the `limited` rule as if written.
    fn inherit_range(&self, el: &Element<'_, '_>, spec: &mut ActuatorSpec, record: &Record) -> Result<(), MjcfError> {
        let (name, kind) = match &spec.target {
            Target::Joint(name) => (name, "joint"),
            Target::JointInParent(_) => {
                return Err(el.invalid("inheritrange can only be used with joint and tendon transmission"));
            }
            Target::Tendon(name) => (name, "tendon"),
            Target::Site { .. } | Target::SliderCrank { .. } => {
                return Err(el.invalid("inheritrange needs a joint or tendon transmission"));
            }
        };
        let &([lo, hi], scalar) = self
            .target_ranges
            .get(&(kind, name.clone()))
            .ok_or_else(|| el.invalid(format!("no {kind} named `{name}`")))?;
        if !scalar {
            return Err(el.invalid("inheritrange can only be used with hinge and slide joints"));
        }
        if lo == hi {
            return Err(el.invalid(format!("inheritrange used but `{name}` has no range")));
        }
        let (mean, radius) = (0.5 * (hi + lo), 0.5 * (hi - lo) * record.inherit_range);
        let range = Some([mean - radius, mean + radius]);
        let autolimits = self.settings.autolimits;
        match spec.dynamics {
            Dynamics::None | Dynamics::Filter { exact: true, .. } => {
                spec.ctrl_range = match record.ctrl_limited {
                    true => range,
                    false => el.limits_of("ctrllimited", "ctrlrange", range, autolimits)?,
                };
            }
            Dynamics::Integrator => spec.act_range = el.limits_of("actlimited", "actrange", range, autolimits)?,
            _ => return Err(el.invalid("inheritrange only available for position and intvelocity actuators")),
        }
        Ok(())
    }

    fn contact(&mut self, at: Located<'a>) -> Result<(), MjcfError> {
        let mut pairs = 0;
        for child in self.parsed.children(at) {
            let el = Element::new(child, None);
            if el.tag() == "pair" {
                self.contact_pair(child, pairs)?;
                pairs += 1;
                continue;
            }
            if el.tag() != "exclude" {
                return Err(el.unsupported(format!("<{}> in <contact>", el.tag())));
            }
            el.check_attributes("exclude")?;
            let body = |attr: &str| -> Result<usize, MjcfError> {
                let name = el.string(attr).ok_or_else(|| el.invalid(format!("missing attribute `{attr}`")))?;
                self.body_index.get(&name).copied().ok_or_else(|| el.invalid(format!("no body named `{name}`")))
            };
            let (a, b) = (body("body1")?, body("body2")?);
            self.builder.exclude_contact(a, b);
        }
        Ok(())
    }
}

impl<'a> Compiler<'a> {
    /// A `<pair>`: two named geoms and the contact's own parameters (MuJoCo's defaults, or the
    /// class's `<pair>` defaults); the names are resolved when the model is built.
    fn contact_pair(&mut self, at: Located<'a>, k: usize) -> Result<(), MjcfError> {
        let el = self.defaults.element_in(at, "pair")?;
        el.check_attributes("pair")?;
        let geom = |attr: &str| el.string(attr).ok_or_else(|| el.invalid(format!("missing attribute `{attr}`")));
        let mut pair = ContactPairSpec::new(geom("geom1")?, geom("geom2")?);
        pair.name = el.string("name").unwrap_or_else(|| format!("pair {k}"));
        // The builder checks it is one of MuJoCo's; here only that it is a small number.
        let condim = el.integer("condim")?.unwrap_or(3);
        pair.condim = u8::try_from(condim).map_err(|_| el.invalid(format!("condim {condim} is not 1, 3, 4 or 6")))?;
        pair.friction = el.padded("friction", pair.friction)?;
        pair.solref = el.padded("solref", pair.solref)?;
        pair.solreffriction = el.padded("solreffriction", pair.solreffriction)?;
        pair.solimp = el.padded("solimp", pair.solimp)?;
        pair.margin = el.number_or("margin", 0.0)?;
        pair.gap = el.number_or("gap", 0.0)?;
        self.places.insert(("pair", pair.name.clone()), el.location());
        self.builder.add_contact_pair(pair);
        Ok(())
    }
}

/// A geom may not use a mesh whose `maxhullvert` makes MuJoCo's hull differ from phyz's
/// ([`HullCut`](crate::model::mesh::HullCut)) where MuJoCo would read that hull: to weigh the mesh, or (the geom touching,
/// or named by a `<pair>` or a sensor: `named`) for contacts.
fn refuse_cut_hull(el: &Element<'_, '_>, geom: &Geom<f64>, named: bool) -> Result<(), MjcfError> {
    let Shape::Mesh { hull } = &geom.shape else { return Ok(()) };
    let Some(cut) = hull.hull_cut else { return Ok(()) };
    let touches = geom.contype != 0 || geom.conaffinity != 0 || named;
    if !(cut.weighed || touches) {
        return Ok(());
    }
    let mesh = el.string("mesh").unwrap_or_default();
    Err(el.unsupported(format!(
        "a geom reading mesh `{mesh}`'s hull, cut by maxhullvert={} below its {} distinct points (MuJoCo's qhull then stops at that many vertices, in its own insertion order, which phyz does not compute)",
        cut.limit, cut.points
    )))
}

/// An asset's default name: its file's name without the directory and extension.
fn file_stem(file: &str) -> String {
    Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A joint's `springdamper` (time constant, damping ratio), when given: both must be positive.
fn spring_damper(el: &Element<'_, '_>) -> Result<Option<[f64; 2]>, MjcfError> {
    match el.array::<2>("springdamper")? {
        None | Some([0.0, 0.0]) => Ok(None),
        Some([tau, zeta]) if tau > 0.0 && zeta > 0.0 => Ok(Some([tau, zeta])),
        Some(_) => Err(el.invalid("springdamper values must be positive")),
    }
}

/// A `<sensor>` child: its kind and what it reads, found by name in the built model.
fn read_sensor(el: &Element<'_, '_>, model: &Model<f64>) -> Result<Sensor<f64>, MjcfError> {
    let required = |key: &str| el.string(key).ok_or_else(|| el.invalid(format!("`{key}` is required")));
    let missing = |what: &str, name: &str| el.invalid(format!("no {what} named `{name}`"));
    let joint = || {
        let name = required("joint")?;
        model.joint_id(&name).ok_or_else(|| missing("joint", &name))
    };
    let tendon = || {
        let name = required("tendon")?;
        model.tendons().iter().position(|t| t.name == name).ok_or_else(|| missing("tendon", &name))
    };
    let actuator = || {
        let name = required("actuator")?;
        model.actuators().iter().position(|a| a.name == name).ok_or_else(|| missing("actuator", &name))
    };
    let site_named = |name: &str| model.site_id(name).ok_or_else(|| missing("single site", name));
    let body_named = |name: &str| model.body_id(name).ok_or_else(|| missing("body", name));
    let frame = |kind_key: &'static str, name_key: &str| -> Result<Option<Frame>, MjcfError> {
        let Some(name) = el.string(name_key) else { return Ok(None) };
        let kinds = ["body", "xbody", "geom", "site", "camera"];
        Ok(Some(match el.keyword(kind_key, &kinds)? {
            Some("body") => Frame::Inertial(body_named(&name)?),
            Some("xbody") => Frame::Body(body_named(&name)?),
            Some("geom") => Frame::Geom(
                model
                    .bodies()
                    .iter()
                    .flat_map(|b| &b.geoms)
                    .position(|g| g.name == name)
                    .ok_or_else(|| missing("geom", &name))?,
            ),
            Some("site") => {
                let (body, site) = site_named(&name)?;
                Frame::Site { body, site }
            }
            Some(other) => return Err(el.unsupported_attribute(kind_key, format!("frame sensors on a {other}"))),
            None => return Err(el.invalid(format!("`{kind_key}` is required with `{name_key}`"))),
        }))
    };
    let of = || frame("objtype", "objname")?.ok_or_else(|| el.invalid("`objname` is required"));
    let site = || site_named(&required("site")?);
    let kind = match el.tag() {
        "jointpos" => SensorKind::JointPos(joint()?),
        "jointvel" => SensorKind::JointVel(joint()?),
        "ballquat" => SensorKind::BallQuat(joint()?),
        "tendonpos" => SensorKind::TendonPos(tendon()?),
        "tendonvel" => SensorKind::TendonVel(tendon()?),
        "actuatorpos" => SensorKind::ActuatorPos(actuator()?),
        "actuatorvel" => SensorKind::ActuatorVel(actuator()?),
        "actuatorfrc" => SensorKind::ActuatorFrc(actuator()?),
        "framepos" => {
            let relative_to = frame("reftype", "refname")?;
            if matches!(relative_to, Some(Frame::Inertial(_))) {
                return Err(el.unsupported("positions in a body's inertial frame (reftype `body`)"));
            }
            SensorKind::FramePos { of: of()?, relative_to }
        }
        tag @ ("framequat" | "framexaxis" | "frameyaxis" | "framezaxis") => {
            let (of, relative_to) = (of()?, frame("reftype", "refname")?);
            // MuJoCo orders a body's principal axes by its own eigen-solver, phyz by another:
            // the inertial frame's position agrees, its orientation need not.
            if [Some(of), relative_to].iter().any(|f| matches!(f, Some(Frame::Inertial(_)))) {
                return Err(el.unsupported("the orientation of a body's inertial frame (objtype or reftype `body`)"));
            }
            match tag {
                "framequat" => SensorKind::FrameQuat { of, relative_to },
                _ => SensorKind::FrameAxis { of, relative_to, axis: usize::from(tag.as_bytes()[5] - b'x') },
            }
        }
        tag @ ("framelinvel" | "frameangvel") => {
            let (of, relative_to) = (of()?, frame("reftype", "refname")?);
            // The reference's axes matter, and phyz orders a body's principal axes otherwise.
            if matches!(relative_to, Some(Frame::Inertial(_))) {
                return Err(el.unsupported("velocities in a body's inertial frame (reftype `body`)"));
            }
            match tag {
                "framelinvel" => SensorKind::FrameLinVel { of, relative_to },
                _ => SensorKind::FrameAngVel { of, relative_to },
            }
        }
        "subtreecom" => SensorKind::SubtreeCom(body_named(&required("body")?)?),
        "subtreelinvel" => SensorKind::SubtreeLinVel(body_named(&required("body")?)?),
        "subtreeangmom" => SensorKind::SubtreeAngMom(body_named(&required("body")?)?),
        "gyro" => {
            let (body, site) = site()?;
            SensorKind::Gyro { body, site }
        }
        "velocimeter" => {
            let (body, site) = site()?;
            SensorKind::Velocimeter { body, site }
        }
        tag @ ("touch" | "accelerometer" | "force" | "torque") => {
            let (body, site) = site()?;
            match tag {
                "touch" => SensorKind::Touch { body, site },
                "accelerometer" => SensorKind::Accelerometer { body, site },
                "force" => SensorKind::Force { body, site },
                _ => SensorKind::Torque { body, site },
            }
        }
        // A kind phyz does not compute is refused whatever its attributes (MuJoCo's own).
        tag => return Err(el.unsupported(format!("<{tag}> sensors"))),
    };
    el.check_attributes("sensor")?;
    Ok(Sensor { name: el.string("name").unwrap_or_default(), kind, cutoff: el.number_or("cutoff", 0.0)? })
}

/// The keyframe MuJoCo's `mj_resetData` gives: the reference configuration at rest, zero
/// activations and controls, the mocap bodies where the model puts them.
fn rest_key(model: &Model<f64>) -> Keyframe {
    let rest = model.default_state();
    Keyframe {
        name: String::new(),
        time: 0.0,
        qpos: rest.qpos,
        qvel: rest.qvel,
        act: rest.act,
        ctrl: DVector::zeros(model.nu()),
        mocap_pos: rest.mocap_pos,
        mocap_quat: rest.mocap_quat,
    }
}

/// A `<key>`: unspecified parts are those of [`rest_key`]; orientations are normalized, as
/// MuJoCo does.
fn read_key(el: &Element<'_, '_>, model: &Model<f64>) -> Result<Keyframe, MjcfError> {
    if el.tag() != "key" {
        return Err(el.invalid(format!("unexpected <{}> in <keyframe>", el.tag())));
    }
    el.check_attributes("key")?;
    let rest = rest_key(model);
    // As MuJoCo: what is written replaces the leading numbers of the rest key's; more than the
    // model has is an error.
    let values = |name: &str, default: Vec<f64>| -> Result<Vec<f64>, MjcfError> {
        let given = el.numbers(name)?.unwrap_or_default();
        if given.len() > default.len() {
            return Err(el.invalid(format!("`{name}` has {} values, the model has {}", given.len(), default.len())));
        }
        Ok(given.iter().chain(&default[given.len()..]).copied().collect())
    };
    let vector = |name: &str, default: DVector<f64>| -> Result<DVector<f64>, MjcfError> {
        Ok(DVector::from_vec(values(name, default.as_slice().to_vec())?))
    };
    let flat_pos = rest.mocap_pos.iter().flat_map(|p| [p.x, p.y, p.z]).collect();
    let mocap_pos = values("mpos", flat_pos)?.chunks(3).map(Vector3::from_column_slice).collect();
    let flat_quat = rest.mocap_quat.iter().flat_map(|q| [q.w, q.x, q.y, q.z]).collect();
    let mocap_quat = values("mquat", flat_quat)?
        .chunks(4)
        .map(|q| Quat::new(q[0], q[1], q[2], q[3]))
        // Normalized, but a zero quaternion is kept (and refused when stepped), as in MuJoCo.
        .map(|q| if q.norm_squared() > 0.0 { q.normalize() } else { q })
        .collect();
    Ok(Keyframe {
        name: el.string("name").unwrap_or_default(),
        time: el.number_or("time", 0.0)?,
        qpos: vector("qpos", rest.qpos)?,
        qvel: vector("qvel", rest.qvel)?,
        act: vector("act", rest.act)?,
        ctrl: vector("ctrl", rest.ctrl)?,
        mocap_pos,
        mocap_quat,
    })
}

/// What an `<equality>` element names: joints, tendons, bodies (with a connect's or weld's
/// anchor and a weld's relpose) or sites.
fn equality_names(el: &Element<'_, '_>) -> Result<CoupledNames, MjcfError> {
    let required = |key: &str| el.string(key).ok_or_else(|| el.invalid(format!("`{key}` is required")));
    Ok(match el.tag() {
        "joint" => CoupledNames::Joints { first: required("joint1")?, second: el.string("joint2") },
        "tendon" => CoupledNames::Tendons { first: required("tendon1")?, second: el.string("tendon2") },
        // As MuJoCo reads them: a weld names bodies whenever it has `body1`, a connect only
        // with `body1` and `anchor`; otherwise both name two sites.
        tag => {
            let (weld, anchor) = (tag == "weld", el.array::<3>("anchor")?);
            let bodies = || Ok::<_, MjcfError>((required("body1")?, el.string("body2")));
            match (weld, anchor) {
                (true, anchor) if el.has("body1") => {
                    let ((first, second), relpose) = (bodies()?, el.array::<7>("relpose")?);
                    CoupledNames::Weld { first, second, anchor: anchor.unwrap_or([0.0; 3]), relpose }
                }
                (false, Some(anchor)) if el.has("body1") => {
                    let (first, second) = bodies()?;
                    CoupledNames::Connect { first, second, anchor }
                }
                _ if el.has("site1") => {
                    CoupledNames::Sites { first: required("site1")?, second: required("site2")?, weld }
                }
                _ => return Err(el.invalid("needs `body1` and `anchor`, or `site1` and `site2`")),
            }
        }
    })
}

/// A site's zone from its `type` and `size` (MuJoCo's default size 0.005 where a number is not
/// given), a `fromto` setting the length as a geom's does.
fn site_zone(el: &Element<'_, '_>) -> Result<SiteZone, MjcfError> {
    let given = el.prefix_numbers("size")?.unwrap_or_default();
    if given.len() > 3 || !given.iter().all(|x| x.is_finite() && *x >= 0.0) {
        return Err(el.invalid("a site's size is at most three non-negative numbers"));
    }
    let size = |k: usize| given.get(k).copied().unwrap_or(0.005);
    let length =
        el.array::<6>("fromto")?.map(|[a, b, c, d, e, f]| (Vector3::new(d, e, f) - Vector3::new(a, b, c)).norm() / 2.0);
    let half = |k: usize| length.unwrap_or_else(|| size(k));
    Ok(match el.keyword("type", &["sphere", "capsule", "ellipsoid", "cylinder", "box"])?.unwrap_or("sphere") {
        "capsule" => SiteZone::Capsule { radius: size(0), half_length: half(1) },
        "cylinder" => SiteZone::Cylinder { radius: size(0), half_length: half(1) },
        "ellipsoid" => SiteZone::Ellipsoid { radii: [size(0), size(1), half(2)] },
        "box" => SiteZone::Box { half_extents: [size(0), size(1), half(2)] },
        _ => SiteZone::Sphere { radius: size(0) },
    })
}

/// Records where a named element of `kind` is written (for the errors that name it, and the
/// tendon paths and actuators that reference it), and, in a replicate's copy, its name as
/// written among the replicate's names.
fn name_place(
    places: &mut HashMap<(&'static str, String), Location>,
    replicates: &mut [Replicate],
    kind: &'static str,
    name: &str,
    el: &Element<'_, '_>,
) {
    if name.is_empty() {
        return;
    }
    places.insert((kind, name.to_string()), el.location());
    if let (Some(rename), Some(written)) = (el.rename(), el.raw("name")) {
        replicates[rename.replicate].names.insert((kind, written.to_string()));
    }
}
