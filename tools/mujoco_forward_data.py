#!/usr/bin/env python3
"""MuJoCo's mjData after mj_forward at the contact reference states (phyz's `sim::forward` and
its `Data` against it).

For every model folder of tests/reference/contact_steps (tools/mujoco_contact_steps.py), MuJoCo
(Newton run to convergence: tolerance 1e-15, 1000 iterations) evaluates mj_forward at each of
the folder's input states under its controls, and writes into the same folder:

  forward_acc.csv       per state: qacc_smooth (nv numbers), then qacc (nv numbers)
  forward_contacts.csv  per contact: state, geom ids, dim, efc_address, dist, pos (3), frame
                        (9: normal, first tangent, second tangent)
  forward_efc.csv       per constraint row: state, row, efc_type, efc_id, efc_force
  forward_efc_J.csv     per non-zero of efc_J: state, row, column, value

All floats are written with repr(), so a rerun reproduces the files byte for byte.

Usage:  python3 tools/mujoco_forward_data.py [--gym-dir DIR] [--dir DIR]
"""

import argparse
import os
import sys

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mujoco_reference import (  # noqa: E402
    DEFAULT_GYM_DIR, REPO, ROBOTS, floats, read_csv, route_warnings, set_state, split_state, write_csv)
from mujoco_constraint_reference import converged_solver  # noqa: E402


def dense_jacobian(m, d):
    """efc_J as an nefc x nv array, whichever layout MuJoCo chose."""
    if not mujoco.mj_isSparse(m):
        return d.efc_J[:d.nefc * m.nv].reshape(d.nefc, m.nv)
    out = np.zeros((d.nefc, m.nv))
    for r in range(d.nefc):
        start, count = d.efc_J_rowadr[r], d.efc_J_rownnz[r]
        out[r, d.efc_J_colind[start:start + count]] = d.efc_J[start:start + count]
    return out


def generate(path, folder):
    m = converged_solver(mujoco.MjModel.from_xml_path(path))
    d = mujoco.MjData(m)
    states = floats(read_csv(os.path.join(folder, "onestep_in.csv"))[1])
    ctrls = read_csv(os.path.join(folder, "onestep_ctrl.csv"), header=False)[1]
    acc, contacts, efc, jac = [], [], [], []
    for k, (row, ctrl) in enumerate(zip(states, ctrls)):
        qpos, qvel, extras = split_state(m, row[1:])
        set_state(m, d, qpos, qvel, np.array([float(x) for x in ctrl]), extras)
        mujoco.mj_forward(m, d)
        acc.append(list(d.qacc_smooth) + list(d.qacc))
        for c in d.contact[:d.ncon]:
            contacts.append([str(k), str(c.geom[0]), str(c.geom[1]), str(c.dim), str(c.efc_address), c.dist,
                             *c.pos, *c.frame])
        for r in range(d.nefc):
            efc.append([str(k), str(r), str(d.efc_type[r]), str(d.efc_id[r]), d.efc_force[r]])
        for r, line in enumerate(dense_jacobian(m, d)):
            jac.extend([str(k), str(r), str(j), x] for j, x in enumerate(line) if x != 0.0)
    write_csv(os.path.join(folder, "forward_acc.csv"), None, acc)
    header = ["state", "geom1", "geom2", "dim", "efc_address", "dist", "px", "py", "pz"] + [f"f{i}" for i in range(9)]
    write_csv(os.path.join(folder, "forward_contacts.csv"), header, contacts)
    write_csv(os.path.join(folder, "forward_efc.csv"), ["state", "row", "type", "id", "force"], efc)
    write_csv(os.path.join(folder, "forward_efc_J.csv"), ["state", "row", "column", "value"], jac)
    return len(states), len(contacts), len(efc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gym-dir", default=DEFAULT_GYM_DIR, help="directory of gymnasium MJCF files")
    ap.add_argument("--dir", default=os.path.join(REPO, "tests", "reference", "contact_steps"))
    args = ap.parse_args()
    route_warnings()
    print(f"MuJoCo {mujoco.__version__}; writing into {args.dir}")
    for name in sorted(os.listdir(args.dir)):
        folder = os.path.join(args.dir, name)
        path = os.path.join(REPO, ROBOTS[name]) if name in ROBOTS else os.path.join(args.gym_dir, f"{name}.xml")
        states, ncon, nefc = generate(path, folder)
        print(f"{name:<26} {states} states, {ncon} contacts, {nefc} constraint rows")


if __name__ == "__main__":
    main()
