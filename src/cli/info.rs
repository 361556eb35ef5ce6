//! `phyz info`: what a model is made of, what of it phyz simulates, and what it does not
//! support yet — every unsupported element and attribute, in one listing.

use std::collections::BTreeMap;
use std::path::Path;

use phyz::Model;
use phyz::mjcf::{self, Survey};
use phyz::model::{Coupled, Dynamics, Integrator, SensorKind, TendonPath, Term, Transmission};

use super::CliError;

pub fn run(path: &Path) -> Result<(), CliError> {
    let Survey { unsupported, model } = mjcf::survey(path);
    let model = match model {
        Ok(model) => model,
        Err(e) => {
            // What was set aside may be why the rest does not load (an element named by another).
            if !unsupported.is_empty() {
                println!("not supported by phyz yet (set aside before the error below):");
                unsupported.iter().for_each(|u| println!("  {u}"));
            }
            return Err(e.into());
        }
    };
    summary(&model);
    features(&model);
    parts(&model);
    // Sensors phyz does not compute load (they change no dynamics) and are listed here too.
    let sensors = model.sensors().iter().filter_map(|x| match x.kind {
        SensorKind::Unsupported(index) => {
            model.unsupported_sensor(index).map(|what| format!("{what} (outputs refused)"))
        }
        _ => None,
    });
    let listing: Vec<String> = unsupported.iter().map(ToString::to_string).chain(sensors).collect();
    if listing.is_empty() {
        return Ok(());
    }
    println!("not supported by phyz yet (left out of everything above):");
    for what in &listing {
        println!("  {what}");
    }
    Err(format!("{} unsupported element(s) or attribute(s) in {}", listing.len(), path.display()).into())
}

fn summary(model: &Model<f64>) {
    println!(
        "nq {}  nv {}  nu {}  na {}  bodies {}  joints {}  tendons {}",
        model.nq(),
        model.nv(),
        model.nu(),
        model.na(),
        model.bodies().len(),
        model.joints().len(),
        model.tendons().len()
    );
    println!(
        "timestep {} s  integrator {:?}  gravity {:?}",
        model.timestep,
        model.integrator,
        model.gravity.as_slice()
    );
    if model.medium.density > 0.0 || model.medium.viscosity > 0.0 {
        println!("medium: density {}  viscosity {}", model.medium.density, model.medium.viscosity);
    }
    let contact = &model.contact;
    println!("contact (under mujoco_compat): cone {:?}  impratio {}", contact.cone, contact.impratio);
    let noslip = &contact.noslip;
    if noslip.iterations > 0 {
        let stop = if noslip.islands { "each island" } else { "all islands together" };
        println!("  no-slip pass: up to {} sweeps, tolerance {:e}, {stop}", noslip.iterations, noslip.tolerance);
    }
}

/// Counts by kind, as `name ×n` items.
fn counted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    names.for_each(|n| *counts.entry(n).or_default() += 1);
    counts.iter().map(|(n, c)| format!("{n} ×{c}")).collect::<Vec<_>>().join(", ")
}

/// The MuJoCo features the model uses, one line per kind of element.
fn features(model: &Model<f64>) {
    println!("uses:");
    let line = |what: &str, items: String| {
        if !items.is_empty() {
            println!("  {what:<12} {items}");
        }
    };
    let integrator = match model.integrator {
        Integrator::Euler => "Euler",
        Integrator::Rk4 => "RK4",
        Integrator::Implicit => "implicit",
        Integrator::ImplicitFast => "implicitfast",
    };
    line("integrator", format!("{integrator}, {:?} cone", model.contact.cone).to_lowercase());
    line("joints", counted(model.joints().iter().map(|j| j.kind().name())));
    let limited = model.joints().iter().filter(|j| j.range.is_some()).count();
    let friction = model.joints().iter().filter(|j| j.frictionloss > 0.0).count();
    let nonzero = |p: &[f64; 2]| p.iter().any(|x| *x != 0.0);
    let polynomial = model.joints().iter().filter(|j| nonzero(&j.stiffness_poly) || nonzero(&j.damping_poly)).count()
        + model.tendons().iter().filter(|t| nonzero(&t.stiffness_poly) || nonzero(&t.damping_poly)).count();
    line(
        "joint terms",
        [
            (limited, "limited"),
            (friction, "with friction loss"),
            (polynomial, "polynomial spring or damper (joints, tendons)"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{w} ×{n}"))
        .collect::<Vec<_>>()
        .join(", "),
    );
    let geoms = model.bodies().iter().flat_map(|b| &b.geoms);
    line("geoms", counted(geoms.map(|g| g.shape.name())));
    let mocap = model.bodies().iter().filter(|b| b.mocap().is_some()).count();
    line("bodies", if mocap > 0 { format!("mocap ×{mocap}") } else { String::new() });
    line(
        "tendons",
        counted(model.tendons().iter().map(|t| match t.path() {
            TendonPath::Fixed { .. } => "fixed",
            TendonPath::Spatial(_) => "spatial",
        })),
    );
    let dynamics = |a: &phyz::model::Actuator<f64>| match a.dynamics {
        Dynamics::None => "no dynamics",
        Dynamics::Integrator => "integrator",
        Dynamics::Filter { exact: false, .. } => "filter",
        Dynamics::Filter { exact: true, .. } => "filterexact",
        Dynamics::Muscle { .. } => "muscle activation",
    };
    line("actuators", counted(model.actuators().iter().map(dynamics)));
    let law = |a: &phyz::model::Actuator<f64>| match (&a.gain, &a.bias) {
        (Term::Muscle(_), Term::Muscle(_)) => "muscle",
        (Term::Muscle(_), Term::Affine(_)) => "muscle gain",
        (Term::Affine(_), Term::Muscle(_)) => "muscle bias",
        (Term::Affine(_), Term::Affine(_)) => "affine",
    };
    line("force laws", counted(model.actuators().iter().map(law)));
    let transmission = |a: &phyz::model::Actuator<f64>| match a.transmission() {
        Transmission::Joint(_) => "joint",
        Transmission::JointInParent(_) => "joint in parent",
        Transmission::Tendon(_) => "tendon",
        Transmission::Site { reference: None, .. } => "site",
        Transmission::Site { reference: Some(_), .. } => "site from refsite",
        Transmission::SliderCrank { .. } => "slider-crank",
    };
    line("transmissions", counted(model.actuators().iter().map(transmission)));
    let equality = |c: &Coupled| match c {
        Coupled::Joints { .. } => "joint",
        Coupled::Tendons { .. } => "tendon",
        Coupled::Connect { .. } => "connect",
        Coupled::Weld { .. } => "weld",
    };
    line("equalities", counted(model.equalities().iter().map(|e| equality(&e.coupled))));
    let contact =
        [(model.contact_pairs().len(), "explicit pairs"), (model.contact_excludes().len(), "excluded body pairs")];
    line(
        "contact",
        contact.iter().filter(|(n, _)| *n > 0).map(|(n, w)| format!("{w} ×{n}")).collect::<Vec<_>>().join(", "),
    );
    let sensor = |x: &phyz::model::Sensor<f64>| match x.kind {
        SensorKind::JointPos(_) => "jointpos",
        SensorKind::JointVel(_) => "jointvel",
        SensorKind::BallQuat(_) => "ballquat",
        SensorKind::TendonPos(_) => "tendonpos",
        SensorKind::TendonVel(_) => "tendonvel",
        SensorKind::ActuatorPos(_) => "actuatorpos",
        SensorKind::ActuatorVel(_) => "actuatorvel",
        SensorKind::ActuatorFrc(_) => "actuatorfrc",
        SensorKind::FramePos { .. } => "framepos",
        SensorKind::FrameQuat { .. } => "framequat",
        SensorKind::FrameAxis { .. } => "frame axis",
        SensorKind::SubtreeCom(_) => "subtreecom",
        SensorKind::SubtreeLinVel(_) => "subtreelinvel",
        SensorKind::SubtreeAngMom(_) => "subtreeangmom",
        SensorKind::FrameLinVel { .. } => "framelinvel",
        SensorKind::FrameAngVel { .. } => "frameangvel",
        SensorKind::Gyro { .. } => "gyro",
        SensorKind::Velocimeter { .. } => "velocimeter",
        SensorKind::Touch { .. } => "touch",
        SensorKind::Accelerometer { .. } => "accelerometer",
        SensorKind::Force { .. } => "force",
        SensorKind::Torque { .. } => "torque",
        SensorKind::Unsupported(_) => "not supported",
    };
    line("sensors", counted(model.sensors().iter().map(sensor)));
    line("keyframes", if model.keyframes().is_empty() { String::new() } else { model.keyframes().len().to_string() });
}

/// The bodies, joints and actuators, one per line.
fn parts(model: &Model<f64>) {
    println!("bodies:");
    for (i, body) in model.bodies().iter().enumerate().skip(1) {
        let parent = &model.bodies()[body.parent()].name;
        let mocap = if body.mocap().is_some() { "  mocap" } else { "" };
        println!("  {i:>3} {:<24} parent {:<20} mass {:.6}{mocap}", display(&body.name), display(parent), body.mass);
    }
    println!("joints:");
    for joint in model.joints() {
        let range = joint.range.map(|[lo, hi]| format!("  range [{lo:.4}, {hi:.4}]")).unwrap_or_default();
        println!(
            "  {:<24} {:?} on {:<20} qpos {:>3}  dof {:>3}{range}",
            display(&joint.name),
            joint.kind(),
            display(&model.bodies()[joint.body()].name),
            joint.qpos_adr(),
            joint.dof_adr()
        );
    }
    if model.nu() > 0 {
        println!("actuators:");
        for actuator in model.actuators() {
            let site = |(body, site): (usize, usize)| model.bodies()[body].sites[site].name.clone();
            let (target, gear) = match actuator.transmission() {
                Transmission::Joint(j) => (format!("joint {}", model.joints()[j].name), actuator.gear[0].to_string()),
                Transmission::JointInParent(j) => {
                    (format!("joint {} (gear in parent)", model.joints()[j].name), format!("{:?}", actuator.gear))
                }
                Transmission::Tendon(t) => {
                    (format!("tendon {}", model.tendons()[t].name), actuator.gear[0].to_string())
                }
                Transmission::Site { body, site: s, reference } => {
                    let from = reference.map(|r| format!(" from site {}", site(r))).unwrap_or_default();
                    (format!("site {}{from}", site((body, s))), format!("{:?}", actuator.gear))
                }
                Transmission::SliderCrank { crank, slider } => (
                    format!(
                        "crank site {} on slider site {}, rod {}",
                        site(crank),
                        site(slider),
                        actuator.crank_length
                    ),
                    actuator.gear[0].to_string(),
                ),
            };
            let act = actuator.act_adr().map(|k| format!("  act {k}")).unwrap_or_default();
            println!("  {:<24} {target}  gear {gear}{act}", display(&actuator.name));
        }
    }
}

fn display(name: &str) -> &str {
    if name.is_empty() { "(unnamed)" } else { name }
}
