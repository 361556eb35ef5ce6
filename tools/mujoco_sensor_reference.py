#!/usr/bin/env python3
"""MuJoCo reference for the acceleration-stage sensors (touch, accelerometer, force, torque)
with every constraint on: what mj_forward's sensordata reads at states with contacts.

For each model of tests/models/*.xml with such a sensor, and the public robot models of
ROBOTS below (the Shadow hand with its 92 touch sensors), MuJoCo (its Newton solver run to
convergence: tolerance 1e-15, 1000 iterations) runs as tools/mujoco_contact_steps.py runs
(2000 steps from the first keyframe or qpos0, random controls held for 10 steps, states with a
contact within 1e-9 of the inclusion threshold left out) and keeps 8 of the states with contacts,
evenly spread over the run. Per model, in tests/reference/constrained_sensors/<model>/:

  states.csv     the 8 states (time 0; formats as tests/reference/README.md)
  ctrl.csv       their controls
  sensors.csv    d.sensordata after mj_forward at each (nsensordata numbers a row)
  contacts.csv   ncon,nefc at each
  cfrc_ext.csv   d.cfrc_ext after mj_forward and mj_rnePostConstraint at each (nbody × 6
                 numbers a row: each body's torque, then force)
  model_path.txt a robot model's file, from the repository root

All floats are written with repr(); the run is deterministic (numpy PCG64 seeded with a fixed
constant and the CRC32 of the model name), so a rerun reproduces the files byte for byte.

Usage:  python3 tools/mujoco_sensor_reference.py [--out DIR]
"""

import argparse
import glob
import os
import shutil
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mujoco_reference import REPO, rng_for, route_warnings, set_state, state_header, state_row, write_csv  # noqa: E402
from mujoco_constraint_reference import converged_solver  # noqa: E402
from mujoco_contact_steps import SAMPLES, SEED, run  # noqa: E402

ROBOTS = {
    "hand_manipulate_block_touch_sensors":
        "tests/models/robots/gymnasium_robotics/hand/manipulate_block_touch_sensors.xml",
}

ACCELERATION_STAGE = {int(t) for t in (mujoco.mjtSensor.mjSENS_TOUCH, mujoco.mjtSensor.mjSENS_ACCELEROMETER,
                                        mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE)}


def generate(name, path, out_root):
    m = converged_solver(mujoco.MjModel.from_xml_path(path))
    found = run(m, rng_for(name, SEED))
    if not found:
        return None
    picks = [found[i] for i in np.linspace(0, len(found) - 1, SAMPLES).round().astype(int)]
    d = mujoco.MjData(m)
    states, ctrls, sensors, counts, wrenches = [], [], [], [], []
    for qpos, qvel, ctrl, ncon, nefc, extras in picks:
        set_state(m, d, qpos, qvel, ctrl, extras)
        mujoco.mj_forward(m, d)
        mujoco.mj_rnePostConstraint(m, d)
        wrenches.append(list(d.cfrc_ext.ravel()))
        states.append(state_row(d))
        ctrls.append(list(ctrl))
        sensors.append(list(d.sensordata))
        counts.append([str(ncon), str(nefc)])
    out = os.path.join(out_root, name)
    os.makedirs(out)
    write_csv(os.path.join(out, "states.csv"), state_header(m), states)
    write_csv(os.path.join(out, "ctrl.csv"), None, ctrls)
    write_csv(os.path.join(out, "sensors.csv"), None, sensors)
    write_csv(os.path.join(out, "contacts.csv"), ["ncon", "nefc"], counts)
    write_csv(os.path.join(out, "cfrc_ext.csv"), None, wrenches)
    touch = [i for i in range(m.nsensor) if int(m.sensor_type[i]) == int(mujoco.mjtSensor.mjSENS_TOUCH)]
    touching = [sum(1 for row in sensors if row[m.sensor_adr[i]] > 0) for i in touch]
    return len(found), counts, touching


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "reference", "constrained_sensors"))
    args = ap.parse_args()
    route_warnings()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    print(f"MuJoCo {mujoco.__version__}; writing to {args.out}")
    local = [(os.path.splitext(os.path.basename(p))[0], p)
             for p in sorted(glob.glob(os.path.join(REPO, "tests", "models", "*.xml")))]
    robots = [(name, os.path.join(REPO, path)) for name, path in sorted(ROBOTS.items())]
    for name, path in local + robots:
        m = mujoco.MjModel.from_xml_path(path)
        if not any(int(m.sensor_type[i]) in ACCELERATION_STAGE for i in range(m.nsensor)):
            continue
        result = generate(name, path, args.out)
        if name in ROBOTS:
            with open(os.path.join(args.out, name, "model_path.txt"), "w") as f:
                f.write(ROBOTS[name] + "\n")
        if result is None:
            print(f"{name:<26} no contact: skipped")
            continue
        n, counts, touching = result
        print(f"{name:<26} {n:>5} steps with contact; ncon/nefc " + " ".join(f"{c[0]}/{c[1]}" for c in counts)
              + f"; touch sensors reading > 0 in {touching} of {SAMPLES} states")


if __name__ == "__main__":
    main()
