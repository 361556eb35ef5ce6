//! The smooth forces and the unconstrained acceleration, one unit per world
//! (`dynamics::smooth::Smooth::forces` and `acceleration`): actuator forces, then joint springs
//! and dampers, less the bias forces, solved with the mass matrix's factor. The model's other
//! forces (fluid, gravity compensation, tendon springs, activation dynamics, muscles) are refused
//! when it is packed (`layout::Packed::unsupported_forces`), never skipped.

use burn_cubecl::cubecl;
use burn_cubecl::cubecl::prelude::*;

use super::layout::{Array, actuator_float, actuator_int, dof_float, header, joint, link_float, link_int};
use super::mass::solve_in_place;
use super::world::{World, start};

/// An actuator's law at a world's state: its gear, its gain and bias (each affine in the
/// joint's length `gear · q` and velocity `gear · q̇`), and its control as given.
#[derive(CubeType, Clone)]
pub struct Law<F: Float> {
    pub gear: F,
    pub gain: F,
    pub bias: F,
    pub ctrl: F,
}

/// Actuator `a`'s law.
#[cube]
pub fn actuator_law<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    world: &World,
    a: usize,
) -> Law<F> {
    let ai = ints[header::ACTUATOR_INTS] as usize + a * actuator_int::LEN;
    let af = ints[header::ACTUATOR_FLOATS] as usize + a * actuator_float::LEN;
    let d = ints[ai + actuator_int::DOF] as usize;
    let qpos = start(ints, comptime![Array::Qpos as usize]);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let ctrl = start(ints, comptime![Array::Ctrl as usize]);
    let gear = floats[af + actuator_float::GEAR];
    let length = gear * data[world.at(qpos, ints[ai + actuator_int::QPOS] as usize)];
    let velocity = gear * data[world.at(qvel, d)];
    let (g, b) = (af + actuator_float::GAIN, af + actuator_float::BIAS);
    Law::<F> {
        gear,
        gain: floats[g] + floats[g + 1] * length + floats[g + 2] * velocity,
        bias: floats[b] + floats[b + 1] * length + floats[b + 2] * velocity,
        ctrl: data[world.at(ctrl, a)],
    }
}

/// Adds each actuator's generalized force to [`Array::Force`]: its control held to its range,
/// `gain · u + bias` held to its force range, along the gear.
#[cube]
fn add_actuator_forces<F: Float>(ints: &Tensor<u32>, floats: &mut Tensor<F>, data: &mut Tensor<F>, world: &World) {
    let force = start(ints, comptime![Array::Force as usize]);
    for a in 0..ints[header::ACTUATORS] as usize {
        let ai = ints[header::ACTUATOR_INTS] as usize + a * actuator_int::LEN;
        let af = ints[header::ACTUATOR_FLOATS] as usize + a * actuator_float::LEN;
        let d = ints[ai + actuator_int::DOF] as usize;
        let law = actuator_law::<F>(ints, floats, data, world, a);
        let (c, f) = (af + actuator_float::CTRL_RANGE, af + actuator_float::FORCE_RANGE);
        let u = F::clamp(law.ctrl, floats[c], floats[c + 1]);
        let pull = F::clamp(law.gain * u + law.bias, floats[f], floats[f + 1]);
        data[world.at(force, d)] += law.gear * pull;
    }
}

/// Fills [`Array::Force`] (actuator and passive forces less [`Array::Bias`]) and
/// [`Array::SmoothAcceleration`], after the mass matrix's factor and the bias forces.
#[cube(launch_unchecked)]
pub(crate) fn smooth_acceleration<F: Float>(
    ints: &Tensor<u32>,
    floats: &mut Tensor<F>,
    data: &mut Tensor<F>,
    worlds: u32,
) {
    let world = World { index: ABSOLUTE_POS, count: worlds as usize };
    if world.index >= world.count {
        terminate!();
    }
    let nv = ints[header::DOFS] as usize;
    let qpos = start(ints, comptime![Array::Qpos as usize]);
    let qvel = start(ints, comptime![Array::Qvel as usize]);
    let force = start(ints, comptime![Array::Force as usize]);
    let bias = start(ints, comptime![Array::Bias as usize]);
    let acceleration = start(ints, comptime![Array::SmoothAcceleration as usize]);
    for d in 0..nv {
        data[world.at(force, d)] = F::new(0.0);
    }
    add_actuator_forces::<F>(ints, floats, data, &world);
    let dof_floats = ints[header::DOF_FLOATS] as usize;
    for i in 0..ints[header::LINKS] as usize {
        let li = ints[header::LINK_INTS] as usize + i * link_int::LEN;
        let lf = ints[header::LINK_FLOATS] as usize + i * link_float::LEN;
        let adr = ints[li + link_int::DOF_ADR] as usize;
        let code = ints[li + link_int::JOINT];
        if code == joint::HINGE || code == joint::SLIDE {
            let stretch =
                data[world.at(qpos, ints[li + link_int::QPOS_ADR] as usize)] - floats[lf + link_float::SPRING_REF];
            data[world.at(force, adr)] -= stretch * floats[lf + link_float::STIFFNESS];
        }
        for d in adr..adr + ints[li + link_int::DOF_NUM] as usize {
            let damping = floats[dof_floats + d * dof_float::LEN + dof_float::DAMPING];
            let v = data[world.at(qvel, d)];
            data[world.at(force, d)] -= v * damping;
        }
    }
    for d in 0..nv {
        let f = data[world.at(force, d)] - data[world.at(bias, d)];
        data[world.at(force, d)] = f;
        data[world.at(acceleration, d)] = f;
    }
    solve_in_place::<F>(ints, data, &world, acceleration);
}
