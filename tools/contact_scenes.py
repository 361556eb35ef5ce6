"""Shared by the contact reference scripts (tools/mujoco_multiccd.py, mujoco_plane_mesh.py,
mujoco_sphere_cylinder.py, mujoco_capsule_convex.py): orientations in MuJoCo's quaternion
arithmetic, and the scene file format tests/multiccd.rs reads.

A scene file holds, per scene, a line `=== <name> <ncon>`, one line per MuJoCo contact
`<geom1> <geom2> <pos x y z> <normal x y z> <dist>` (MuJoCo's order: normal from geom1 to geom2,
dist negative when penetrating, every float as repr()), then the model on one line.
"""
import math
import sys

import mujoco
import numpy as np


def rotation(axis, degrees):
    """The quaternion of a turn about `axis` (unit) by `degrees`."""
    q = np.zeros(4)
    mujoco.mju_axisAngle2Quat(q, np.array(axis, float), math.radians(degrees))
    return q


def compose(a, b):
    """The quaternion product a b (b first)."""
    q = np.zeros(4)
    mujoco.mju_mulQuat(q, a, b)
    return q


def random_quat(rng):
    """A uniformly random orientation from `rng` (a random.Random)."""
    q = np.array([rng.gauss(0, 1) for _ in range(4)])
    return q / np.linalg.norm(q)


def fmt(v):
    """Numbers as an MJCF attribute value, to full precision."""
    return " ".join(f"{x:.17g}" for x in v)


def write_scenes(scenes, out=sys.stdout):
    """Loads each (name, xml) of `scenes`, runs MuJoCo's collision at its reference pose, and
    writes the scene in the format above."""
    blocks = []
    for name, xml in scenes:
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        lines = [f"=== {name} {d.ncon}"]
        for c in d.contact[:d.ncon]:
            g1, g2 = (m.geom(g).name for g in c.geom)
            nums = [*c.pos, *c.frame[:3], c.dist]
            lines.append(" ".join([g1, g2, *(repr(float(v)) for v in nums)]))
        lines.append(xml)
        blocks.append("\n".join(lines))
    out.write("\n".join(blocks) + "\n")
