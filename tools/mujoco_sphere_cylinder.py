"""MuJoCo 4.0.1's contacts between a sphere and a cylinder (its `mjc_SphereCylinder`), and
between spheres whose centres coincide.

Writes tests/reference/multiccd/sphere_cylinder.txt, read by tests/multiccd.rs, in the format
of tools/mujoco_multiccd.py: per scene a line `=== <name> <ncon>`, one line per contact
`<geom1> <geom2> <pos x y z> <normal x y z> <dist>`, then the model. Scenes: a sphere of radius
5 cm against a cylinder (radius 10 cm, half-length 15 cm) turned at random, the sphere's centre
beside the side, over a cap, past the rim, inside (nearer the side or a cap), or at the
cylinder's centre; depths from -1 cm (apart, some within a 2 cm margin) to the sphere's
radius; and two spheres at one centre. Random values from a fixed seed. Regenerate from the
repository root:

    python3 tools/mujoco_sphere_cylinder.py > tests/reference/multiccd/sphere_cylinder.txt
"""
import math
import random
import sys

import mujoco
import numpy as np

R, H, RS = 0.1, 0.15, 0.05


def random_quat(rng):
    q = np.array([rng.gauss(0, 1) for _ in range(4)])
    return q / np.linalg.norm(q)


def local_centre(rng, where):
    """The sphere's centre in the cylinder's frame."""
    phi = rng.uniform(0, 2 * math.pi)
    radial = np.array([math.cos(phi), math.sin(phi), 0.0])
    gap = rng.uniform(-RS, 0.01)  # surface gap: negative penetrates
    if where == "side":
        return radial * (R + RS + gap) + [0, 0, rng.uniform(-0.9 * H, 0.9 * H)]
    if where == "cap":
        return radial * rng.uniform(0, 0.9 * R) + [0, 0, rng.choice([-1, 1]) * (H + RS + gap)]
    if where == "rim":
        up = rng.uniform(0.2, 1.3)
        direction = radial + [0, 0, rng.choice([-1, 1]) * up]
        direction /= np.linalg.norm(direction)
        return radial * R + np.array([0, 0, math.copysign(H, direction[2])]) + direction * (RS + gap)
    if where == "inside":
        return radial * rng.uniform(0, 0.95 * R) + [0, 0, rng.uniform(-0.95 * H, 0.95 * H)]
    return np.zeros(3)


def model(cyl_pos, cyl_quat, sphere_pos, margin):
    fmt = lambda v: " ".join(f"{x:.17g}" for x in v)
    return (f'<mujoco><worldbody>'
            f'<body pos="{fmt(cyl_pos)}" quat="{fmt(cyl_quat)}"><freejoint/>'
            f'<geom name="cylinder" type="cylinder" size="{R} {H}" margin="{margin}"/></body>'
            f'<body pos="{fmt(sphere_pos)}"><freejoint/>'
            f'<geom name="sphere" type="sphere" size="{RS}"/></body>'
            f'</worldbody></mujoco>')


def scenes(rng):
    for k in range(100):
        where = rng.choice(["side", "side", "cap", "cap", "rim", "rim", "inside", "centre"])
        quat = random_quat(rng)
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, quat)
        pos = np.array([rng.uniform(-1, 1) for _ in range(3)])
        centre = pos + mat.reshape(3, 3) @ local_centre(rng, where)
        margin = 0.02 if rng.random() < 0.25 else 0.0
        yield f"{k:03d}_{where}", model(pos, quat, centre, margin)
    yield "100_spheres_at_one_centre", (
        '<mujoco><worldbody><body pos=".1 .2 .3"><freejoint/><geom name="a" type="sphere" size=".1"/>'
        '</body><body pos=".1 .2 .3"><freejoint/><geom name="b" type="sphere" size=".05"/></body>'
        '</worldbody></mujoco>')


def main():
    rng = random.Random(3)
    out = []
    for name, xml in scenes(rng):
        m = mujoco.MjModel.from_xml_string(xml)
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        lines = [f"=== {name} {d.ncon}"]
        for c in d.contact[:d.ncon]:
            g1, g2 = (m.geom(g).name for g in c.geom)
            nums = [*c.pos, *c.frame[:3], c.dist]
            lines.append(" ".join([g1, g2, *(repr(float(v)) for v in nums)]))
        lines.append(xml)
        out.append("\n".join(lines))
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
