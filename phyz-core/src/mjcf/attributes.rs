//! Every attribute the loader accepts, element by element, and what it does with each one.
//!
//! An accepted attribute is a promise: it is compiled as MuJoCo compiles it, or it leaves
//! MuJoCo's dynamics unchanged, or it is refused by name unless it is at MuJoCo's default.
//! `docs/mjcf.md` shows this table with the reasons, and a test holds the two equal. An
//! attribute that is not here but that MuJoCo's schema knows is refused by name
//! ([`Unsupported`](super::Unsupported)); one MuJoCo does not know either is an error, as in
//! MuJoCo.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use Neutral::{Absent, Words, Zero};
use Treatment::{Compiled, NoEffect, Refused};

/// What the loader does with an accepted attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Compiled as MuJoCo compiles it.
    Compiled,
    /// Read and set aside: it changes nothing in MuJoCo's dynamics (names of no reference,
    /// colours, rendering, solver bookkeeping, a setting whose only use phyz refuses).
    NoEffect,
    /// Refused, naming the attribute, unless it is at its neutral value.
    Refused(Neutral),
}

/// An attribute's neutral value: the one that leaves MuJoCo's model as if it were not written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Neutral {
    /// One of these words.
    Words(&'static [&'static str]),
    /// Numbers that are all zero.
    Zero,
    /// Not written at all.
    Absent,
}

impl Treatment {
    /// The word `docs/mjcf.md` gives the treatment.
    pub fn word(self) -> &'static str {
        match self {
            Compiled => "compiled",
            NoEffect => "no effect",
            Refused(_) => "refused unless default",
        }
    }
}

type Row = (&'static str, Treatment);

/// The attributes that place a frame.
const FRAME: [Row; 6] = [
    ("pos", Compiled),
    ("quat", Compiled),
    ("axisangle", Compiled),
    ("euler", Compiled),
    ("xyaxes", Compiled),
    ("zaxis", Compiled),
];

const ENABLE: Neutral = Words(&["enable"]);
const DISABLE: Neutral = Words(&["disable"]);

/// The table: the element (its tag, or `context/tag` where one tag means different elements)
/// and its accepted attributes. An element whose whole content is rendering or bookkeeping
/// has the one attribute `*`.
const TABLE: &[(&str, &[Row])] = &[
    ("mujoco", &[("model", NoEffect)]),
    (
        "compiler",
        &[
            ("angle", Compiled),
            ("coordinate", Refused(Words(&["local"]))),
            ("inertiafromgeom", Compiled),
            ("inertiagrouprange", Compiled),
            ("eulerseq", Compiled),
            ("settotalmass", Compiled),
            ("autolimits", Compiled),
            ("meshdir", Compiled),
            ("assetdir", Compiled),
            ("strippath", Compiled),
            ("discardvisual", Compiled),
            ("texturedir", NoEffect),
            ("usethread", NoEffect),
            ("fitaabb", NoEffect),
            ("boundmass", Compiled),
            ("boundinertia", Compiled),
            ("balanceinertia", Compiled),
            ("fusestatic", Refused(Words(&["false"]))),
            ("alignfree", Compiled),
            ("saveinertial", Refused(Absent)),
        ],
    ),
    (
        "lengthrange",
        &[
            ("mode", Compiled),
            ("useexisting", Compiled),
            ("uselimit", Compiled),
            ("accel", Compiled),
            ("maxforce", Compiled),
            ("timeconst", Compiled),
            ("timestep", Compiled),
            ("inttotal", Compiled),
            ("interval", Compiled),
            ("tolrange", Compiled),
        ],
    ),
    (
        "option",
        &[
            ("timestep", Compiled),
            ("gravity", Compiled),
            ("integrator", Compiled),
            ("density", Compiled),
            ("viscosity", Compiled),
            ("wind", Compiled),
            ("cone", Compiled),
            ("impratio", Compiled),
            ("magnetic", NoEffect),
            ("iterations", NoEffect),
            ("solver", NoEffect),
            ("tolerance", NoEffect),
            ("ls_iterations", NoEffect),
            ("ls_tolerance", NoEffect),
            ("noslip_tolerance", Compiled),
            ("ccd_iterations", Compiled),
            ("ccd_tolerance", Compiled),
            ("jacobian", NoEffect),
            ("o_margin", NoEffect),
            ("o_solref", NoEffect),
            ("o_solimp", NoEffect),
            ("o_friction", NoEffect),
            ("sdf_iterations", NoEffect),
            ("sdf_initpoints", NoEffect),
            ("sleep_tolerance", NoEffect),
            ("noslip_iterations", Compiled),
            ("actuatorgroupdisable", Refused(Absent)),
        ],
    ),
    (
        "flag",
        &[
            ("constraint", Compiled),
            ("equality", Compiled),
            ("frictionloss", Compiled),
            ("limit", Compiled),
            ("contact", Compiled),
            ("spring", Compiled),
            ("damper", Compiled),
            ("gravity", Compiled),
            ("clampctrl", Compiled),
            ("actuation", Compiled),
            ("eulerdamp", Compiled),
            ("filterparent", Compiled),
            ("warmstart", NoEffect),
            ("sensor", NoEffect),
            ("midphase", NoEffect),
            ("autoreset", NoEffect),
            ("island", Compiled),
            ("energy", NoEffect),
            ("fwdinv", NoEffect),
            ("invdiscrete", NoEffect),
            ("refsafe", Refused(ENABLE)),
            ("nativeccd", Refused(ENABLE)),
            ("multiccd", Refused(ENABLE)),
            ("override", Refused(DISABLE)),
            ("sleep", Refused(DISABLE)),
            ("diagexact", Refused(DISABLE)),
            ("ipc", Refused(DISABLE)),
            ("speculative", Refused(DISABLE)),
        ],
    ),
    (
        "size",
        &[
            ("nkey", Compiled),
            ("memory", NoEffect),
            ("njmax", NoEffect),
            ("nconmax", NoEffect),
            ("nstack", NoEffect),
            ("nuserdata", NoEffect),
            ("nuser_body", NoEffect),
            ("nuser_jnt", NoEffect),
            ("nuser_geom", NoEffect),
            ("nuser_site", NoEffect),
            ("nuser_cam", NoEffect),
            ("nuser_tendon", NoEffect),
            ("nuser_actuator", NoEffect),
            ("nuser_sensor", NoEffect),
        ],
    ),
    ("visual", &[("*", NoEffect)]),
    ("statistic", &[("*", NoEffect)]),
    ("custom", &[("*", NoEffect)]),
    ("texture", &[("*", NoEffect)]),
    ("material", &[("name", Compiled), ("rgba", Compiled), ("*", NoEffect)]),
    ("skin", &[("*", NoEffect)]),
    ("camera", &[("*", NoEffect)]),
    ("light", &[("*", NoEffect)]),
    ("default", &[("class", Compiled)]),
    (
        "frame",
        &[FRAME[0], FRAME[1], FRAME[2], FRAME[3], FRAME[4], FRAME[5], ("childclass", Compiled), ("name", NoEffect)],
    ),
    (
        "replicate",
        &[("count", Compiled), ("offset", Compiled), ("euler", Compiled), ("sep", Compiled), ("childclass", Compiled)],
    ),
    (
        "body",
        &[
            FRAME[0],
            FRAME[1],
            FRAME[2],
            FRAME[3],
            FRAME[4],
            FRAME[5],
            ("name", Compiled),
            ("childclass", Compiled),
            ("mocap", Compiled),
            ("gravcomp", Compiled),
            ("user", NoEffect),
            ("sleep", NoEffect),
        ],
    ),
    (
        "inertial",
        &[
            FRAME[0],
            FRAME[1],
            FRAME[2],
            FRAME[3],
            FRAME[4],
            FRAME[5],
            ("mass", Compiled),
            ("diaginertia", Compiled),
            ("fullinertia", Compiled),
        ],
    ),
    (
        "joint",
        &[
            ("name", Compiled),
            ("class", Compiled),
            ("type", Compiled),
            ("pos", Compiled),
            ("axis", Compiled),
            ("limited", Compiled),
            ("range", Compiled),
            ("solreflimit", Compiled),
            ("solimplimit", Compiled),
            ("solreffriction", Compiled),
            ("solimpfriction", Compiled),
            ("stiffness", Compiled),
            ("margin", Compiled),
            ("ref", Compiled),
            ("springref", Compiled),
            ("armature", Compiled),
            ("damping", Compiled),
            ("frictionloss", Compiled),
            ("group", NoEffect),
            ("user", NoEffect),
            ("actuatorfrclimited", Compiled),
            ("actuatorfrcrange", Compiled),
            ("actuatorgravcomp", Compiled),
            ("springdamper", Compiled),
        ],
    ),
    ("freejoint", &[("name", Compiled), ("group", NoEffect), ("align", Compiled)]),
    (
        "geom",
        &[
            FRAME[0],
            FRAME[1],
            FRAME[2],
            FRAME[3],
            FRAME[4],
            FRAME[5],
            ("name", Compiled),
            ("class", Compiled),
            ("type", Compiled),
            ("size", Compiled),
            ("fromto", Compiled),
            ("mesh", Compiled),
            ("group", Compiled),
            ("contype", Compiled),
            ("conaffinity", Compiled),
            ("condim", Compiled),
            ("priority", Compiled),
            ("friction", Compiled),
            ("mass", Compiled),
            ("density", Compiled),
            ("solmix", Compiled),
            ("solref", Compiled),
            ("solimp", Compiled),
            ("margin", Compiled),
            ("gap", Compiled),
            ("material", Compiled),
            ("rgba", Compiled),
            ("castshadow", NoEffect),
            ("hfield", Compiled),
            ("fitscale", NoEffect),
            ("fluidcoef", NoEffect),
            ("user", NoEffect),
            ("shellinertia", Refused(Words(&["false"]))),
            ("fluidshape", Refused(Words(&["none"]))),
        ],
    ),
    (
        "site",
        &[
            FRAME[0],
            FRAME[1],
            FRAME[2],
            FRAME[3],
            FRAME[4],
            FRAME[5],
            ("name", Compiled),
            ("class", Compiled),
            ("type", Compiled),
            ("size", Compiled),
            ("fromto", Compiled),
            ("group", NoEffect),
            ("material", NoEffect),
            ("rgba", NoEffect),
            ("user", NoEffect),
        ],
    ),
    (
        "hfield",
        &[
            ("name", Compiled),
            ("size", Compiled),
            ("nrow", Compiled),
            ("ncol", Compiled),
            ("elevation", Compiled),
            ("file", Compiled),
            ("content_type", Refused(Absent)),
        ],
    ),
    (
        "mesh",
        &[
            ("name", Compiled),
            ("class", Compiled),
            ("file", Compiled),
            ("scale", Compiled),
            ("inertia", Compiled),
            ("refpos", Compiled),
            ("refquat", Compiled),
            ("vertex", Compiled),
            ("face", Compiled),
            ("smoothnormal", NoEffect),
            ("normal", NoEffect),
            ("texcoord", NoEffect),
            ("material", NoEffect),
            ("content_type", Refused(Absent)),
            ("maxhullvert", Compiled),
            ("builtin", Refused(Absent)),
            ("params", Refused(Absent)),
        ],
    ),
    ("equality/joint", &[("polycoef", Compiled), ("joint1", Compiled), ("joint2", Compiled)]),
    ("equality/tendon", &[("polycoef", Compiled), ("tendon1", Compiled), ("tendon2", Compiled)]),
    (
        "equality/connect",
        &[("body1", Compiled), ("body2", Compiled), ("anchor", Compiled), ("site1", Compiled), ("site2", Compiled)],
    ),
    (
        "equality/weld",
        &[
            ("body1", Compiled),
            ("body2", Compiled),
            ("anchor", Compiled),
            ("relpose", Compiled),
            ("torquescale", Compiled),
            ("site1", Compiled),
            ("site2", Compiled),
        ],
    ),
    (
        "equality",
        &[("name", Compiled), ("class", Compiled), ("active", Compiled), ("solref", Compiled), ("solimp", Compiled)],
    ),
    (
        "tendon",
        &[
            ("name", Compiled),
            ("class", Compiled),
            ("limited", Compiled),
            ("range", Compiled),
            ("solreflimit", Compiled),
            ("solimplimit", Compiled),
            ("solreffriction", Compiled),
            ("solimpfriction", Compiled),
            ("frictionloss", Compiled),
            ("springlength", Compiled),
            ("margin", Compiled),
            ("stiffness", Compiled),
            ("damping", Compiled),
            ("group", NoEffect),
            ("user", NoEffect),
            ("rgba", NoEffect),
            ("width", NoEffect),
            ("material", NoEffect),
            ("actuatorfrclimited", Compiled),
            ("actuatorfrcrange", Compiled),
            ("armature", Refused(Zero)),
        ],
    ),
    ("fixed/joint", &[("joint", Compiled), ("coef", Compiled)]),
    ("spatial/site", &[("site", Compiled)]),
    ("spatial/geom", &[("geom", Compiled), ("sidesite", Compiled)]),
    ("spatial/pulley", &[("divisor", Compiled)]),
    (
        "actuator",
        &[
            ("name", Compiled),
            ("class", Compiled),
            ("joint", Compiled),
            ("tendon", Compiled),
            ("site", Compiled),
            ("refsite", Compiled),
            ("gear", Compiled),
            ("ctrllimited", Compiled),
            ("forcelimited", Compiled),
            ("actlimited", Compiled),
            ("ctrlrange", Compiled),
            ("forcerange", Compiled),
            ("actrange", Compiled),
            ("actdim", Compiled),
            ("dyntype", Compiled),
            ("gaintype", Compiled),
            ("biastype", Compiled),
            ("dynprm", Compiled),
            ("gainprm", Compiled),
            ("biasprm", Compiled),
            ("actearly", Compiled),
            ("kp", Compiled),
            ("kv", Compiled),
            ("timeconst", Compiled),
            ("area", Compiled),
            ("diameter", Compiled),
            ("bias", Compiled),
            ("inheritrange", Compiled),
            ("dampratio", Compiled),
            ("force", Compiled),
            ("scale", Compiled),
            ("range", Compiled),
            ("lmin", Compiled),
            ("lmax", Compiled),
            ("vmax", Compiled),
            ("fpmax", Compiled),
            ("fvmax", Compiled),
            ("tausmooth", Compiled),
            ("lengthrange", Compiled),
            ("group", NoEffect),
            ("user", NoEffect),
            ("cranklength", Compiled),
            ("nsample", NoEffect),
            ("interp", NoEffect),
            ("jointinparent", Compiled),
            ("body", Refused(Absent)),
            ("cranksite", Compiled),
            ("slidersite", Compiled),
            ("delay", Refused(Zero)),
        ],
    ),
    ("exclude", &[("name", NoEffect), ("body1", Compiled), ("body2", Compiled)]),
    (
        "pair",
        &[
            ("name", Compiled),
            ("class", Compiled),
            ("geom1", Compiled),
            ("geom2", Compiled),
            ("condim", Compiled),
            ("friction", Compiled),
            ("solref", Compiled),
            ("solreffriction", Compiled),
            ("solimp", Compiled),
            ("margin", Compiled),
            ("gap", Compiled),
        ],
    ),
    (
        "key",
        &[
            ("name", Compiled),
            ("time", Compiled),
            ("qpos", Compiled),
            ("qvel", Compiled),
            ("act", Compiled),
            ("ctrl", Compiled),
            ("mpos", Compiled),
            ("mquat", Compiled),
        ],
    ),
    (
        "sensor",
        &[
            ("name", Compiled),
            ("joint", Compiled),
            ("tendon", Compiled),
            ("actuator", Compiled),
            ("site", Compiled),
            ("body", Compiled),
            ("objtype", Compiled),
            ("objname", Compiled),
            ("reftype", Compiled),
            ("refname", Compiled),
            ("cutoff", Compiled),
            ("noise", NoEffect),
            ("user", NoEffect),
            ("interp", NoEffect),
            ("nsample", Refused(Zero)),
            ("delay", Refused(Zero)),
            ("interval", Refused(Zero)),
        ],
    ),
];

/// The accepted attributes of `element` (a key of the table).
pub(super) fn accepted(element: &str) -> &'static [Row] {
    TABLE.iter().find(|(key, _)| *key == element).map_or(&[], |(_, rows)| rows)
}

/// Every accepted attribute: (element, attribute, treatment).
pub fn all() -> impl Iterator<Item = (&'static str, &'static str, Treatment)> {
    TABLE.iter().flat_map(|(element, rows)| rows.iter().map(move |(name, t)| (*element, *name, *t)))
}

/// True when MuJoCo's schema gives an element with tag `tag` under a `parent` element the
/// attribute `attribute` (MuJoCo refuses it otherwise). Where the schema has no entry for that
/// parent (a frame's contents), or the parent is `<mujoco>` (an included file's root too), any
/// element with that tag counts.
pub(super) fn mujoco_knows(parent: &str, tag: &str, attribute: &str) -> bool {
    type Schema = HashMap<&'static str, HashSet<&'static str>>;
    static SCHEMA: OnceLock<(Schema, Schema)> = OnceLock::new();
    let (by_path, by_tag) = SCHEMA.get_or_init(|| {
        let (mut by_path, mut by_tag) = (Schema::new(), Schema::new());
        for line in include_str!("mujoco_schema.txt").lines().filter(|l| !l.starts_with('#')) {
            let mut words = line.split_whitespace();
            let Some(key) = words.next() else { continue };
            let tag = key.rsplit('/').next().unwrap_or(key);
            let attributes: Vec<&str> = words.collect();
            by_path.entry(key).or_default().extend(attributes.iter().copied());
            by_tag.entry(tag).or_default().extend(attributes);
        }
        (by_path, by_tag)
    });
    // Under `<mujoco>`, the element may be a root's child in an included file, which stands
    // wherever the include does: any element with that tag counts.
    let path = format!("{parent}/{tag}");
    let known = by_path.get(path.as_str()).filter(|_| parent != "mujoco").or_else(|| by_tag.get(tag));
    known.is_some_and(|attributes| attributes.contains(attribute))
}
