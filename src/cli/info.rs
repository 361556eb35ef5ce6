//! `phyz info`: what a model is made of.

use phyz::Model;
use phyz::model::Transmission;

use super::CliError;

pub fn run(model: &Model<f64>) -> Result<(), CliError> {
    println!(
        "nq {}  nv {}  nu {}  bodies {}  joints {}  tendons {}",
        model.nq(),
        model.nv(),
        model.nu(),
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
    println!("bodies:");
    for (i, body) in model.bodies().iter().enumerate().skip(1) {
        let parent = &model.bodies()[body.parent()].name;
        println!("  {i:>3} {:<24} parent {:<20} mass {:.6}", display(&body.name), display(parent), body.mass);
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
            let target = match actuator.transmission() {
                Transmission::Joint(j) => format!("joint {}", model.joints()[j].name),
                Transmission::Tendon(t) => format!("tendon {}", model.tendons()[t].name),
            };
            println!("  {:<24} {target}  gear {}", display(&actuator.name), actuator.gear);
        }
    }
    Ok(())
}

fn display(name: &str) -> &str {
    if name.is_empty() { "(unnamed)" } else { name }
}
