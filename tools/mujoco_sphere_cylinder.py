"""MuJoCo 4.0.1's contacts between a sphere and a cylinder (its `mjc_SphereCylinder`), and
between spheres whose centres coincide.

Writes tests/reference/multiccd/sphere_cylinder.txt, read by tests/multiccd.rs, in the format
of tools/mujoco_multiccd.py: per scene a line `=== <name> <ncon>`, one line per contact
`<geom1> <geom2> <pos x y z> <normal x y z> <dist>`, then the model. Scenes: a sphere of radius
5 cm against a cylinder (radius 10 cm, half-length 15 cm) turned at random, the sphere's centre
beside the side, over a cap, past the rim, inside (nearer the side or a cap), or at the
cylinder's centre; depths from -1 cm (apart, some within a 2 cm margin) to the sphere's
radius; and geoms whose centres (or closest points) coincide, where MuJoCo's normal is the
cross product of the two geoms' z axes (the world's x where they are parallel): two spheres at
one centre, turned or not, a turned sphere on a cylinder's axis, a sphere on a capsule's axis
(the capsule's body first or second), two capsules crossing. Random values from fixed seeds. Regenerate from the repository root:

    python3 tools/mujoco_sphere_cylinder.py > tests/reference/multiccd/sphere_cylinder.txt
"""
import math
import random
import sys

import mujoco
import numpy as np

sys.dont_write_bytecode = True  # no tools/__pycache__ in the working tree
from contact_scenes import random_quat, fmt, write_scenes  # noqa: E402

R, H, RS = 0.1, 0.15, 0.05


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
    return (f'<mujoco><worldbody>'
            f'<body pos="{fmt(cyl_pos)}" quat="{fmt(cyl_quat)}"><freejoint/>'
            f'<geom name="cylinder" type="cylinder" size="{R} {H}" margin="{margin}"/></body>'
            f'<body pos="{fmt(sphere_pos)}"><freejoint/>'
            f'<geom name="sphere" type="sphere" size="{RS}"/></body>'
            f'</worldbody></mujoco>')


def body(pos, quat, geom):
    return f'<body pos="{fmt(pos)}" quat="{fmt(quat)}"><freejoint/>{geom}</body>'


def coinciding(rng):
    """Geoms whose centres, or closest points, coincide, each turned at random (one scene of
    each kind upright, where the z axes are parallel)."""
    upright = np.array([1.0, 0, 0, 0])
    for k in range(15):
        kind = ["spheres", "sphere_on_cylinder_axis", "sphere_on_capsule_axis", "crossing_capsules",
                "capsule_then_sphere"][k % 5]
        q1, q2 = (upright, upright) if k < 5 else (random_quat(rng), random_quat(rng))
        centre = np.array([rng.uniform(-1, 1) for _ in range(3)])
        m1 = np.zeros(9)
        mujoco.mju_quat2Mat(m1, q1)
        axis1 = m1.reshape(3, 3)[:, 2]
        if kind == "spheres":
            a = body(centre, q1, '<geom name="a" type="sphere" size=".1"/>')
            b = body(centre, q2, '<geom name="b" type="sphere" size=".05"/>')
        elif kind == "sphere_on_cylinder_axis":
            # On the axis, nearer the side than a cap.
            a = body(centre + axis1 * rng.uniform(-0.04, 0.04), q2, f'<geom name="sphere" type="sphere" size="{RS}"/>')
            b = body(centre, q1, f'<geom name="cylinder" type="cylinder" size="{R} {H}"/>')
        elif kind == "capsule_then_sphere":
            # The capsule's body first: MuJoCo still takes the sphere first.
            a = body(centre, q1, '<geom name="capsule" type="capsule" size=".05 .15"/>')
            b = body(centre + axis1 * rng.uniform(-0.1, 0.1), q2, f'<geom name="sphere" type="sphere" size="{RS}"/>')
        elif kind == "sphere_on_capsule_axis":
            a = body(centre + axis1 * rng.uniform(-0.1, 0.1), q2, f'<geom name="sphere" type="sphere" size="{RS}"/>')
            b = body(centre, q1, '<geom name="capsule" type="capsule" size=".05 .15"/>')
        else:
            # The second's axis crosses the first's at a point inside both segments.
            m2 = np.zeros(9)
            mujoco.mju_quat2Mat(m2, q2)
            axis2 = m2.reshape(3, 3)[:, 2]
            a = body(centre + axis1 * rng.uniform(-0.1, 0.1), q1, '<geom name="a" type="capsule" size=".04 .15"/>')
            b = body(centre + axis2 * rng.uniform(-0.1, 0.1), q2, '<geom name="b" type="capsule" size=".03 .15"/>')
        yield f"{101 + k:03d}_{kind}", f"<mujoco><worldbody>{a}{b}</worldbody></mujoco>"


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
    yield from coinciding(random.Random(5))


def main():
    write_scenes(scenes(random.Random(3)))


if __name__ == "__main__":
    main()
