#!/usr/bin/env python3
"""MuJoCo reference for one step with contact on every gymnasium model and robot model (phyz's
`mujoco_compat` against `mj_step`).

For each model of the gymnasium set and of mujoco_reference.ROBOTS (every constraint they
have on: contacts, limits, equalities, friction loss), MuJoCo (its Newton solver run to convergence: tolerance
1e-15, 1000 iterations) steps from the model's first keyframe (or qpos0) for 2000 steps under
random controls held for 10 steps each (mocap bodies led along a slow loop, `move_mocap`); of
the states with contacts it keeps 8, evenly spread
over the run, leaving out states with a contact within 1e-9 of MuJoCo's inclusion threshold
(there rounding decides). Per model, in tests/reference/contact_steps/<model>/ (formats as the limits data,
tests/reference/README.md):

  onestep_in.csv, onestep_ctrl.csv, onestep_out.csv   the 8 states (time 0), their controls, and
                                                      the state after one mj_step
  contacts.csv                                        ncon,nefc at each input state
  transition_A_<k>.csv, transition_B_<k>.csv          for the first 2 states where it is smooth:
  transition_state_<k>.csv                            mjd_transitionFD (centred, eps 1e-6) of
                                                      the model stepped with Euler (it refuses
                                                      RK4), and which state (row) it is at

All floats are written with repr(); the run is deterministic (numpy PCG64 seeded with a fixed
constant and the CRC32 of the model name), so a rerun reproduces the files byte for byte.

Usage:  python3 tools/mujoco_contact_steps.py [--gym-dir DIR] [--out DIR]
"""

import argparse
import os
import shutil
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mujoco_reference import (  # noqa: E402
    DEFAULT_GYM_DIR, REPO, ROBOTS, check_stable, ctrl_bounds, model_paths, rng_for, route_warnings, set_state,
    state_header, state_row, write_csv)
from mujoco_constraint_reference import converged_solver  # noqa: E402
from mujoco_transition_reference import EPS, euler, transition  # noqa: E402

SEED = 20261130
STEPS = 2000
HOLD = 10
SAMPLES = 8
TRANSITIONS = 2
AMBIGUOUS = 1e-9


def robust(d):
    """Whether no contact sits within AMBIGUOUS of where MuJoCo includes it (dist below
    includemargin): there, whether it exists is decided by rounding (point's sphere rests at
    exactly dist 0, its height fixed by the joints, and is in or out at 1e-17)."""
    return all(abs(c.dist - c.includemargin) > AMBIGUOUS for c in d.contact[:d.ncon])


def run(m, rng):
    """The run's states with contacts: (qpos, qvel, ctrl, ncon, nefc, (act, mocap_pos,
    mocap_quat)) before each such step."""
    d = mujoco.MjData(m)
    mujoco.mj_resetData(m, d)
    if m.nkey > 0:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    d.time = 0.0
    lo, hi = ctrl_bounds(m)
    found = []
    mpos0, mquat0 = d.mocap_pos.copy(), d.mocap_quat.copy()
    for t in range(STEPS):
        if m.nu and t % HOLD == 0:
            d.ctrl[:] = rng.uniform(lo, hi)
        move_mocap(d, mpos0, mquat0, t)
        mujoco.mj_forward(m, d)
        if d.ncon > 0 and robust(d):
            extras = (d.act.copy(), d.mocap_pos.copy(), d.mocap_quat.copy())
            found.append((d.qpos.copy(), d.qvel.copy(), d.ctrl.copy(), int(d.ncon), int(d.nefc), extras))
        mujoco.mj_step(m, d)
        check_stable(m, d)
    return found


def move_mocap(d, mpos0, mquat0, t):
    """Mocap bodies (a robot's welded target) led along a slow loop of a few centimetres about
    their model pose, turning by up to 0.2 rad, so that the sampled states hold them moved."""
    for k in range(len(mpos0)):
        d.mocap_pos[k] = mpos0[k] + 0.05 * np.array([np.sin(0.01 * t), np.cos(0.013 * t) - 1, 0.5 * np.sin(0.007 * t)])
        turn = 0.2 * np.sin(0.005 * t) * np.array([0.6, 0.0, 0.8])
        q = np.zeros(4)
        mujoco.mju_mulQuat(q, mquat0[k], np.concatenate([[np.cos(np.linalg.norm(turn) / 2)],
                                                          np.sinc(np.linalg.norm(turn) / (2 * np.pi)) / 2 * turn]))
        d.mocap_quat[k] = q


def smooth(m, d, a, qpos, qvel, ctrl, extras):
    """Whether differences at a tenth of the step agree with `a` to 1e-4 of its largest entry:
    where a contact or limit appears within the step, centred differences measure the jump,
    not a derivative, and the state is no reference (pusher's first state: an entry of -1363
    where the derivative is 1)."""
    set_state(m, d, qpos, qvel, ctrl, extras)
    fine = np.zeros_like(a)
    mujoco.mjd_transitionFD(m, d, EPS / 10, True, fine, None, None, None)
    return np.max(np.abs(fine - a)) <= 1e-4 * np.max(np.abs(a))


def generate(name, path, out_root):
    m = converged_solver(mujoco.MjModel.from_xml_path(path))
    found = run(m, rng_for(name, SEED))
    if not found:
        return name, 0, None
    picks = [found[i] for i in np.linspace(0, len(found) - 1, SAMPLES).round().astype(int)]
    d = mujoco.MjData(m)
    ins, outs, ctrls, counts = [], [], [], []
    for qpos, qvel, ctrl, ncon, nefc, extras in picks:
        set_state(m, d, qpos, qvel, ctrl, extras)
        ins.append(state_row(d))
        ctrls.append(list(ctrl))
        counts.append([str(ncon), str(nefc)])
        mujoco.mj_step(m, d)
        check_stable(m, d)
        outs.append(state_row(d))
    out = os.path.join(out_root, name)
    os.makedirs(out)
    write_csv(os.path.join(out, "onestep_in.csv"), state_header(m), ins)
    write_csv(os.path.join(out, "onestep_out.csv"), state_header(m), outs)
    write_csv(os.path.join(out, "onestep_ctrl.csv"), None, ctrls)
    write_csv(os.path.join(out, "contacts.csv"), ["ncon", "nefc"], counts)
    stepped = euler(converged_solver(mujoco.MjModel.from_xml_path(path)))
    e = mujoco.MjData(stepped)
    k = 0
    for i, (qpos, qvel, ctrl, _, _, extras) in enumerate(picks):
        if k == TRANSITIONS:
            break
        set_state(stepped, e, qpos, qvel, ctrl, extras)
        a, b = transition(stepped, e)
        if not smooth(stepped, e, a, qpos, qvel, ctrl, extras):
            continue
        write_csv(os.path.join(out, f"transition_A_{k}.csv"), None, a.tolist())
        write_csv(os.path.join(out, f"transition_B_{k}.csv"), None, b.tolist())
        write_csv(os.path.join(out, f"transition_state_{k}.csv"), None, [[str(i)]])
        k += 1
    return name, len(found), counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gym-dir", default=DEFAULT_GYM_DIR, help="directory of gymnasium MJCF files")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "reference", "contact_steps"))
    args = ap.parse_args()
    route_warnings()
    gym, _ = model_paths(args.gym_dir)
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    print(f"MuJoCo {mujoco.__version__}; writing to {args.out}")
    models = [(os.path.splitext(os.path.basename(p))[0], p) for p in gym]
    models += [(name, os.path.join(REPO, path)) for name, path in sorted(ROBOTS.items())]
    for name, path in models:
        name, n, counts = generate(name, path, args.out)
        if counts is None:
            print(f"{name:<26} no contact in {STEPS} steps: skipped")
        else:
            print(f"{name:<26} {n:>5} steps with contact; samples ncon/nefc "
                  + " ".join(f"{c[0]}/{c[1]}" for c in counts))


if __name__ == "__main__":
    main()
